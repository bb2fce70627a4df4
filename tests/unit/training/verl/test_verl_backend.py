"""VerlBackend: plan (dry run) anywhere; train fails closed without the pinned release.

The launch path runs against a stand-in ``verl`` package on PYTHONPATH (the real one
needs CUDA and the GPU image): its ``trainer.main_ppo`` reads the Hydra overrides, loads
the reward file by ``reward.custom_reward_function.path``/``.name``, grades a right and
a wrong answer to the first row and saves ``global_step_<N>/actor``; its
``model_merger`` writes ``lora_adapter/``, which the backend copies to ``adapter/``.
"""

from __future__ import annotations

import importlib.metadata
import json
import os
from pathlib import Path

import pytest
from typer.testing import CliRunner

import rlstream.training
from rlstream.errors import ConfigError
from rlstream.training.config import TrainConfig
from rlstream.training.verl import VerlBackend
from rlstream.training.verl.pin import VERL_VERSION, VerlMissingError, VerlVersionError

pytestmark = pytest.mark.unit

MAIN_PPO = r"""
import importlib.util, json, os, sys
args = dict(a.split("=", 1) for a in sys.argv[1:])
mode = os.environ["FAKE_VERL_MODE"]
spec = importlib.util.spec_from_file_location("r", args["reward.custom_reward_function.path"])
module = importlib.util.module_from_spec(spec)
spec.loader.exec_module(module)
score = getattr(module, args["reward.custom_reward_function.name"])
row = json.loads(open(args["data.train_files"]).readline())
truth = row["reward_model"]["ground_truth"]
gold = json.loads(truth)["context"]["label"].split()[-1]
call = lambda s: score(data_source=row["data_source"], solution_str=s, ground_truth=truth,
                       extra_info=row["extra_info"])["score"]
print("rewards", call(f"It is {gold}."), call("It is 0."), flush=True)
if mode == "crash":
    print("ValueError: simulated failure", flush=True)
    sys.exit(3)
if mode != "no-checkpoint":
    step = args["trainer.total_training_steps"]
    os.makedirs(os.path.join(args["trainer.default_local_dir"], f"global_step_{step}", "actor"))
"""
MERGER = r"""
import os, sys
args = sys.argv[1:]
assert args[:3] == ["merge", "--backend", "fsdp"], args
target = args[args.index("--target_dir") + 1]
assert os.path.isdir(args[args.index("--local_dir") + 1])
print("merging", args[args.index("--local_dir") + 1], flush=True)
if os.environ["FAKE_VERL_MODE"] != "no-adapter":
    os.makedirs(os.path.join(target, "lora_adapter"))
    for name in ("adapter_model.safetensors", "adapter_config.json"):
        open(os.path.join(target, "lora_adapter", name), "w").write("stand-in")
"""


@pytest.fixture
def installed(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """verl==<pin> 'installed' here: its version reported, the stand-ins importable."""
    pkg = tmp_path / "site" / "verl"
    (pkg / "trainer").mkdir(parents=True)
    (pkg / "model_merger").mkdir()
    for init in (pkg, pkg / "trainer", pkg / "model_merger"):
        (init / "__init__.py").write_text("")
    (pkg / "trainer" / "main_ppo.py").write_text(MAIN_PPO)
    (pkg / "model_merger" / "__main__.py").write_text(MERGER)
    # rlstream too, from this checkout (the reward file imports its grader, as in the image)
    source = Path(rlstream.training.__file__).parents[2]
    monkeypatch.setenv("PYTHONPATH", os.pathsep.join([str(tmp_path / "site"), str(source)]))
    real = importlib.metadata.version
    monkeypatch.setattr(
        importlib.metadata, "version", lambda d: VERL_VERSION if d == "verl" else real(d)
    )
    return tmp_path


def _config(method: str = "grpo", **kw: object) -> TrainConfig:
    return TrainConfig(method=method, max_steps=2, batch_size=4, **kw)  # type: ignore[arg-type]


@pytest.mark.parametrize("method", ["grpo", "gspo", "ppo"])
def test_plan_is_a_dry_run_with_the_command_and_the_reward_file(
    verl_maths_dataset: Path, tmp_path: Path, method: str
) -> None:
    plan = VerlBackend().plan(verl_maths_dataset, "/models/base", _config(method), tmp_path / "r")
    assert plan.backend == "verl" and plan.method == method
    assert plan.argv[:3] == ("python3", "-m", "verl.trainer.main_ppo")
    assert "def compute_score(" in plan.files["verl/reward_fn.py"]
    assert plan.summary["planned_steps"] == 2 and plan.summary["critic"] is (method == "ppo")
    assert set(plan.summary["files_sha256"]) == {"train.jsonl", "reward_fn.py"}
    assert f"{tmp_path / 'r'}/verl/reward_fn.py" in " ".join(plan.argv)
    assert not (tmp_path / "r").exists()  # a plan writes nothing


@pytest.mark.parametrize(
    ("kw", "match"),
    [
        ({"device": "cpu"}, "needs CUDA GPUs"),
        ({"reward_config": "rewards.yaml"}, "--reward-config is not supported"),
        ({"environment": "python"}, "single-turn only"),
        ({"lora_dropout": 0.05}, "FSDP LoRA has no dropout"),
        ({"on_policy": "champ-model"}, "on-policy grpo: none of the"),
    ],
)
def test_what_it_cannot_run_is_refused(
    verl_maths_dataset: Path, tmp_path: Path, kw: dict[str, object], match: str
) -> None:
    with pytest.raises(ConfigError, match=match):
        VerlBackend().plan(verl_maths_dataset, "/m", _config(**kw), tmp_path)


def test_train_without_verl_fails_closed_in_one_line(
    verl_maths_dataset: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    real = importlib.metadata.version

    def missing(dist: str) -> str:
        if dist == "verl":
            raise importlib.metadata.PackageNotFoundError(dist)
        return real(dist)

    monkeypatch.setattr(importlib.metadata, "version", missing)
    monkeypatch.setattr("rlstream.training.verl.pin.VERL_VENV", tmp_path / "no-venv")
    with pytest.raises(VerlMissingError) as err:
        VerlBackend().train(verl_maths_dataset, "/m", _config(), tmp_path / "run")
    assert "\n" not in str(err.value) and "GPU image" in str(err.value)
    assert not (tmp_path / "run").exists()


def test_a_different_installed_release_is_refused_even_for_a_plan(
    verl_maths_dataset: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(importlib.metadata, "version", lambda d: "0.8.0")
    with pytest.raises(VerlVersionError, match=r"0\.8\.0 is not the pinned 0\.9\.1"):
        VerlBackend().plan(verl_maths_dataset, "/m", _config(), tmp_path)


def test_train_writes_checked_files_runs_verl_and_exports_the_adapter(
    installed: Path, verl_maths_dataset: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("FAKE_VERL_MODE", "ok")
    out = installed / "run"
    result = VerlBackend().train(verl_maths_dataset, "/m", _config(), out)
    assert result.status == "succeeded", result.reason
    assert result.adapter_dir == str(out / "adapter") and result.steps == 2
    assert (out / "adapter" / "adapter_model.safetensors").read_text() == "stand-in"
    log = (out / "verl" / "train.log").read_text()
    assert "rewards 1.0 0.0" in log  # the generated reward file graded like the grader
    assert "merging" in log and "global_step_2/actor" in log
    plan = json.loads((out / "verl" / "plan.json").read_text())
    assert plan["argv"][2] == "verl.trainer.main_ppo"
    metrics = json.loads((out / "metrics.json").read_text())
    assert metrics["exit_code"] == 0 and metrics["planned_steps"] == 2


@pytest.mark.parametrize(
    ("mode", "reason"),
    [
        ("crash", "verl exited with code 3: ValueError: simulated failure"),
        ("no-checkpoint", "saved no checkpoint"),
        ("no-adapter", "wrote no"),
    ],
)
def test_train_reports_a_failed_run_with_its_reason(
    installed: Path,
    verl_maths_dataset: Path,
    monkeypatch: pytest.MonkeyPatch,
    mode: str,
    reason: str,
) -> None:
    monkeypatch.setenv("FAKE_VERL_MODE", mode)
    result = VerlBackend().train(verl_maths_dataset, "/m", _config(), installed / "run")
    assert result.status == "failed" and result.adapter_dir is None
    assert result.reason is not None and reason in result.reason


def test_a_reward_file_changed_after_planning_is_refused(
    installed: Path,
    verl_maths_dataset: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    from rlstream.training.openrlhf.reward_file import RewardFileError
    from rlstream.training.verl import prepare as prepare_mod

    monkeypatch.setenv("FAKE_VERL_MODE", "ok")
    # the plan records another hash than the bytes written: the launch must stop
    monkeypatch.setattr(prepare_mod.reward_file, "sha256_of", lambda data: "0" * 64)
    with pytest.raises(RewardFileError, match="not the planned"):
        VerlBackend().train(verl_maths_dataset, "/m", _config(), installed / "run")
    assert not (installed / "run" / "verl" / "train.log").exists()  # never launched


def test_registered_and_the_cli_dry_run_prints_the_plan(verl_maths_dataset: Path) -> None:
    from rlstream.services.cli.main import app
    from rlstream.training import Backend, get_backend

    backend = get_backend("verl")
    assert isinstance(backend, VerlBackend) and isinstance(backend, Backend)
    assert backend.version() == VERL_VERSION
    args = ["train", "--dataset", str(verl_maths_dataset), "--backend", "verl", "--dry-run"]
    result = CliRunner().invoke(app, [*args, "--method", "grpo", "--model", "/models/base"])
    assert result.exit_code == 0, result.output
    out = result.output
    assert "verl grpo" in out and "verl.trainer.main_ppo" in out
    assert "algorithm.adv_estimator=grpo" in out and "file verl/reward_fn.py" in out
    bad = CliRunner().invoke(app, [*args, "--method", "grpo", "--backend-arg=trainer.n_gpu=1"])
    assert bad.exit_code != 0 and "not a key of verl" in bad.output
    assert "Traceback" not in bad.output
    sft = CliRunner().invoke(app, [*args, "--method", "sft"])
    assert sft.exit_code != 0 and "does not train sft" in sft.output
