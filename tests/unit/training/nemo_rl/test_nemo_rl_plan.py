"""The nemo-rl plan generator: the config it writes validates against the committed key
manifest of the pinned tag (every dotted key), per-method goldens of rlstream's values,
unknown or misspelled keys refused, the adapter compiles, train refuses, and the CLI's
``--dry-run`` writes the plan and says how to run it."""

from __future__ import annotations

import ast
import json
from pathlib import Path
from typing import Any

import pytest
import yaml
from tests.unit.training.openrlhf._helpers_openrlhf import write_maths_dataset
from typer.testing import CliRunner

from rlstream.errors import ConfigError
from rlstream.services.cli.main import app
from rlstream.training.config import TrainConfig
from rlstream.training.nemo_rl import NEMO_RL_TAG, PLAN_ONLY, NemoRLBackend, adapter
from rlstream.training.nemo_rl.pin import NemoRLKeyError, manifest
from rlstream.training.nemo_rl.plan_config import OWNED

pytestmark = pytest.mark.unit


@pytest.fixture(scope="module")
def dataset(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return write_maths_dataset(tmp_path_factory.mktemp("nemo") / "ds")


def _cfg(method: str, **kw: Any) -> TrainConfig:
    base = {"method": method, "max_steps": 4, "batch_size": 8, "num_generations": 4, "seed": 7}
    return TrainConfig.model_validate(base | kw)


def _plan(dataset: Path, out: Path, method: str, **kw: Any) -> tuple[Any, dict[str, Any]]:
    p = NemoRLBackend().plan(dataset, "/models/base", _cfg(method, **kw), out)
    tree = yaml.safe_load(p.files[f"nemo_rl/{method}.yaml"])
    return p, tree


def _flatten(node: Any, prefix: str = "") -> dict[str, Any]:
    if isinstance(node, dict) and node:
        out: dict[str, Any] = {}
        for k, v in node.items():
            out |= _flatten(v, f"{prefix}.{k}" if prefix else k)
        return out
    return {prefix: node}


def test_manifest_is_the_pinned_tags() -> None:
    m = manifest()
    assert m["nemo_rl_tag"] == NEMO_RL_TAG == "v0.7.0"
    assert len(m["commit"]) == 40
    assert {"grpo_math_1B.yaml", "ppo_math_1B.yaml"} <= set(m["sources"])
    assert "loss_fn.sequence_level_importance_ratios" in m["keys"]


@pytest.mark.parametrize("method", ["grpo", "gspo", "ppo"])
def test_plan_validates_against_the_committed_manifest(
    dataset: Path, tmp_path: Path, method: str
) -> None:
    _, tree = _plan(dataset, tmp_path, method)
    m = manifest()
    keys, opened = set(m["keys"]), tuple(m["open"])
    flat = _flatten(tree)
    unknown = [
        k for k in flat
        if k not in keys and k not in OWNED and not any(k.startswith(f"{o}.") for o in opened)
    ]  # fmt: skip
    assert unknown == []
    # and the plan is the tag's own example config, with rlstream's values on top
    base = m["bases"]["ppo" if method == "ppo" else "grpo"]
    kept = [k for k in base if k in flat and flat[k] == base[k]]
    assert len(kept) > 0.8 * len(base)


def test_rlstream_values_per_method(dataset: Path, tmp_path: Path) -> None:
    out = str(tmp_path.absolute() / "nemo_rl")
    _, grpo = _plan(dataset, tmp_path, "grpo")
    assert grpo["grpo"]["num_prompts_per_step"] == 2
    assert grpo["grpo"]["num_generations_per_prompt"] == 4
    assert grpo["grpo"]["max_num_steps"] == 4 and grpo["grpo"]["seed"] == 7
    assert grpo["policy"]["model_name"] == "/models/base"
    assert grpo["policy"]["train_global_batch_size"] == 8
    assert grpo["policy"]["dtensor_cfg"]["lora_cfg"].items() >= {"enabled": True, "dim": 8}.items()
    assert grpo["loss_fn"]["sequence_level_importance_ratios"] is False
    assert grpo["data"]["train"] == {
        "dataset_name": "ResponseDataset",
        "split_validation_size": 0,
        "seed": "${grpo.seed}",
        "data_path": f"{out}/train.jsonl",
    }
    assert grpo["data"]["validation"] is None
    assert grpo["data"]["default"]["env_name"] == adapter.ENV_NAME
    assert grpo["data"]["default"]["processor"] == adapter.PROCESSOR_NAME
    assert grpo["env"][adapter.ENV_NAME] == {"num_workers": 1}
    _, gspo = _plan(dataset, tmp_path, "gspo")
    assert (
        gspo["loss_fn"].items()
        >= {
            "sequence_level_importance_ratios": True,
            "token_level_loss": False,
            "ratio_clip_min": 3e-4,
            "ratio_clip_max": 4e-4,
            "reference_policy_kl_penalty": 0.0,
        }.items()
    )
    _, ppo = _plan(dataset, tmp_path, "ppo")
    assert "grpo" not in ppo and ppo["ppo"]["adv_estimator"]["name"] == "gae"
    assert ppo["ppo"]["num_prompts_per_step"] == 2
    assert ppo["value"]["optimizer"]["kwargs"]["lr"] == 5e-5
    # PPO's KL (rlstream's default 0.01) needs the reference logprobs the example skips
    assert ppo["loss_fn"]["reference_policy_kl_penalty"] == 0.01
    assert ppo["ppo"]["skip_reference_policy_logprobs_calculation"] is False
    assert ppo["data"]["validation"] is None  # the example's AIME validation set is dropped


def test_backend_args_override_and_unknown_keys_are_refused(dataset: Path, tmp_path: Path) -> None:
    _, tree = _plan(dataset, tmp_path, "grpo", backend_args=("--policy.max_grad_norm=0.5",))
    assert tree["policy"]["max_grad_norm"] == 0.5
    with pytest.raises(NemoRLKeyError, match=r"did you mean policy\.max_grad_norm"):
        _plan(dataset, tmp_path, "grpo", backend_args=("--policy.max_grad_nrom=0.5",))
    with pytest.raises(NemoRLKeyError, match=r"no config key 'grpo\.made_up'"):
        _plan(dataset, tmp_path, "grpo", backend_args=("--grpo.made_up=1",))
    # below a free-form section ({} in the examples) any key is the user's
    _, tree = _plan(
        dataset, tmp_path, "grpo", backend_args=("--policy.generation.vllm_kwargs.seed=3",)
    )
    assert tree["policy"]["generation"]["vllm_kwargs"] == {"seed": 3}


def test_other_methods_and_train_are_refused(dataset: Path, tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match="not sft"):
        _plan(dataset, tmp_path, "sft")
    with pytest.raises(ConfigError, match="only plans"):
        NemoRLBackend().train(dataset, "/models/base", _cfg("grpo"), tmp_path)


def test_data_and_adapter(dataset: Path, tmp_path: Path) -> None:
    p, _ = _plan(dataset, tmp_path, "gspo")
    rows = [json.loads(line) for line in p.files["nemo_rl/train.jsonl"].splitlines()]
    assert len(rows) == p.summary["prompts"] > 0
    first = rows[0]["messages"]
    assert [m["role"] for m in first][-1] == "assistant"
    label = json.loads(first[-1]["content"])
    assert label["format"] == "rlstream.nemo_rl.v1" and label["messages"][-1]["role"] == "user"
    assert label["context"]["reward_spec"].startswith("gsm8k")
    source = p.files[f"nemo_rl/{adapter.FILE_NAME}"]
    tree = ast.parse(source)  # compiles; it is never run here (no NeMo RL)
    names = {n.name for n in tree.body if isinstance(n, ast.FunctionDef | ast.ClassDef)}
    assert {adapter.PROCESSOR_NAME, adapter.ENV_CLASS, "main", "_grade"} <= names
    assert "UNTESTED" in source and "examples/run_grpo.py" in source
    assert p.argv[-3:] == ("examples/run_grpo.py", "--config", p.argv[-1])
    assert p.summary["plan_only"] is True


def test_cli_dry_run_writes_the_plan_and_training_is_refused(dataset: Path, tmp_path: Path) -> None:
    out = tmp_path / "run"
    args = ["train", "--dataset", str(dataset), "--backend", "nemo-rl", "--method", "gspo"]
    result = CliRunner().invoke(app, [*args, "--dry-run", "--output", str(out)])
    assert result.exit_code == 0, result.output
    assert (out / "nemo_rl" / "gspo.yaml").is_file() and (out / "nemo_rl" / "train.jsonl").is_file()
    assert "how to run" in result.output and "examples/run_grpo.py" in result.output
    assert "PLAN, not run" in (out / "nemo_rl" / "gspo.yaml").read_text()
    refused = CliRunner().invoke(app, [*args, "--output", str(out)])
    assert refused.exit_code != 0 and "only plans" in refused.output
    assert "Traceback" not in refused.output
    assert PLAN_ONLY.split(":")[0] in refused.output
