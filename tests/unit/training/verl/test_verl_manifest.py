"""The committed key manifest is exactly what the pinned verl release defines, and verl's
own config loader accepts every override rlstream emits.

Against the real wheel (``pip download --no-deps``, cached under the harness cache):
the extractor re-run on the wheel reproduces the committed JSON byte for byte, and Hydra
itself composes ``ppo_trainer.yaml`` from the wheel's files (as ``main_ppo``'s
``@hydra.main`` does, without Ray or a GPU) to the same key set, accepts every override
of every method with the intended values, and refuses a misspelled key.
"""

from __future__ import annotations

import json
import re
import zipfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from rlstream.training.config import TrainConfig
from rlstream.training.verl import keys as keys_mod
from rlstream.training.verl.extract import CONFIG_DIR, build_manifest, config_files, flatten
from rlstream.training.verl.keys import render
from rlstream.training.verl.overrides import RunPaths, base_overrides
from rlstream.training.verl.pin import VERL_VERSION
from rlstream.training.verl.prepare import build_argv
from rlstream_testkit.paths import REPO_ROOT

pytestmark = pytest.mark.unit
HERE = Path(keys_mod.__file__).parent
#: keys of verl 0.9.1's composed ppo_trainer config
KEY_COUNT = 899
PATHS = RunPaths(Path("/r/verl/train.jsonl"), Path("/r/verl/reward_fn.py"), Path("/r/verl/ck"))


@pytest.fixture(scope="module")
def config_dir(verl_wheel: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("verl-config")
    with zipfile.ZipFile(verl_wheel) as zf:
        for name in zf.namelist():
            if name.startswith(CONFIG_DIR + "/") and name.endswith(".yaml"):
                zf.extract(name, out)
    return out / CONFIG_DIR


@pytest.fixture(scope="module")
def compose(config_dir: Path, hydra_modules: None) -> Iterator[Any]:
    from hydra import compose as hydra_compose
    from hydra import initialize_config_dir
    from hydra.core.global_hydra import GlobalHydra

    GlobalHydra.instance().clear()
    with initialize_config_dir(config_dir=str(config_dir), version_base=None):
        yield lambda overrides: hydra_compose(config_name="ppo_trainer", overrides=overrides)
    GlobalHydra.instance().clear()


def test_pin_is_the_dockerfile_arg() -> None:
    text = (REPO_ROOT / "docker" / "Dockerfile.gpu").read_text()
    assert re.findall(r"^ARG VERL_VERSION=(\S+)$", text, flags=re.M) == [VERL_VERSION]
    assert "verl[vllm]==${VERL_VERSION}" in text


def test_committed_manifest_is_for_the_pin() -> None:
    data = json.loads((HERE / keys_mod.MANIFEST).read_text())
    assert data["verl_version"] == VERL_VERSION
    assert data["key_count"] == len(data["keys"]) == KEY_COUNT


def test_reextracted_from_the_wheel_equals_the_committed(verl_wheel: Path) -> None:
    manifest = build_manifest(config_files(verl_wheel), VERL_VERSION)
    text = json.dumps(manifest, indent=1, sort_keys=True) + "\n"
    assert text == (HERE / keys_mod.MANIFEST).read_text()


def test_hydra_composes_the_same_keys_and_defaults(compose: Any) -> None:
    from omegaconf import OmegaConf

    composed = dict(flatten(OmegaConf.to_container(compose([]), resolve=False)))
    manifest = keys_mod.keys()
    assert set(composed) == set(manifest)
    assert {k: v for k, v in composed.items()} == {k: s["default"] for k, s in manifest.items()}


def _config(method: str) -> TrainConfig:
    beta = 0.01 if method == "ppo" else 0.04
    return TrainConfig(method=method, learning_rate=5e-5, beta=beta, max_steps=3)  # type: ignore[arg-type]


@pytest.mark.parametrize("method", ["grpo", "gspo", "ppo"])
def test_hydra_accepts_every_override_with_its_value(compose: Any, method: str) -> None:
    from omegaconf import OmegaConf

    config = _config(method)
    argv, _, _ = build_argv("Org/model-1.5B", method, config, 6, PATHS, "run-x")
    cfg = compose(argv[3:])
    OmegaConf.resolve(cfg)  # every interpolation still resolves
    for key, value in base_overrides("Org/model-1.5B", method, config, 6, PATHS, "run-x").items():
        got = OmegaConf.to_container(cfg, resolve=True)
        for part in key.split("."):
            got = got[part]  # type: ignore[index,call-overload]
        assert got == (list(value) if isinstance(value, tuple) else value), key


def test_hydra_itself_refuses_a_misspelled_key(compose: Any) -> None:
    with pytest.raises(Exception, match="n_gpu_per_node"):
        compose(["trainer.n_gpu_per_node=1"])


@pytest.mark.parametrize(
    "value",
    ["plain", "with space", "it's", "a=b,c", "[x]", "${oops}", "true", "12", "", "~/x", "a:b"],
)
def test_rendered_strings_reach_the_config_unchanged(compose: Any, value: str) -> None:
    cfg = compose([f"trainer.experiment_name={render(value)}"])
    assert cfg.trainer._get_node("experiment_name")._value() == value


@pytest.mark.parametrize("method", ["grpo", "gspo", "ppo"])
def test_the_cli_dry_run_prints_a_plan_verls_loader_accepts(
    compose: Any, verl_maths_dataset: Path, tmp_path: Path, method: str
) -> None:
    """``rlstream train --backend verl --method M --dry-run``: the printed command's
    overrides, composed by Hydra from the pinned wheel's own config files."""
    from typer.testing import CliRunner

    from rlstream.services.cli.main import app

    args = ["train", "--dataset", str(verl_maths_dataset), "--backend", "verl", "--dry-run"]
    args += ["--method", method, "--model", "/models/base", "--output", str(tmp_path / "r")]
    result = CliRunner().invoke(app, args)
    assert result.exit_code == 0, result.output
    block = result.output.split("argv:\n", 1)[1].split("\nfile ", 1)[0]
    argv = [token.strip() for token in block.split(" \\\n")]
    assert argv[:3] == ["python3", "-m", "verl.trainer.main_ppo"]
    cfg = compose(argv[3:])
    assert cfg.algorithm.adv_estimator == ("gae" if method == "ppo" else "grpo")
    assert cfg.actor_rollout_ref.rollout.n == (1 if method == "ppo" else 4)
    assert cfg.data.train_batch_size >= 1
    assert cfg.reward.custom_reward_function.path == str(tmp_path / "r" / "verl" / "reward_fn.py")
    assert cfg.reward.custom_reward_function.name == "compute_score"
    loss = cfg.actor_rollout_ref.actor.policy_loss.loss_mode
    assert loss == ("gspo" if method == "gspo" else "vanilla")
