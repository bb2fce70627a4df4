"""OpenRLHFBackend: plan (dry run) anywhere; train fails closed without the pinned release.

The launch path is exercised against a stand-in ``openrlhf.cli.train_ppo_ray`` on
PYTHONPATH (the real one needs CUDA and the GPU image), which does what the real one does
with our files: loads reward_func.py the way ``utils/agent.py`` does, grades a right and a
wrong completion of the first prompt, and saves an adapter into ``--ckpt.output_dir``.
"""

from __future__ import annotations

import importlib.metadata
import json
import os
import sys
from pathlib import Path

import pytest
from _helpers_openrlhf import Cfg

from rlstream.errors import ConfigError
from rlstream.training.config import TrainConfig
from rlstream.training.openrlhf import OpenRLHFBackend
from rlstream.training.openrlhf.pin import OpenRLHFMissingError, OpenRLHFVersionError

pytestmark = pytest.mark.unit

STAND_IN = r"""
import importlib.util, json, os, sys
args = sys.argv[1:]
def flag(name):
    return args[args.index(name) + 1]
mode = os.environ["FAKE_OPENRLHF_MODE"]
spec = importlib.util.spec_from_file_location("reward_func", flag("--reward.remote_url"))
module = importlib.util.module_from_spec(spec)
spec.loader.exec_module(module)
row = json.loads(open(flag("--data.prompt_dataset")).readline())
label = json.loads(row["label"])
gold = label["context"]["label"].split()[-1]
prompt = "".join(f"<|im_start|>{m['role']}\n{m['content']}<|im_end|>\n" for m in row["prompt"])
prompt += "<|im_start|>assistant\n"
right = module.reward_func([prompt + f"It is {gold}.<|im_end|>"], [prompt], [row["label"]])
wrong = module.reward_func([prompt + "It is 0.<|im_end|>"], [prompt], [row["label"]])
print("rewards", right["rewards"], wrong["rewards"], flush=True)
if mode == "crash":
    print("AssertionError: simulated failure", flush=True)
    sys.exit(3)
if mode == "ok":
    out = flag("--ckpt.output_dir")
    os.makedirs(out, exist_ok=True)
    open(os.path.join(out, "adapter_model.safetensors"), "wb").write(b"stand-in")
"""


#: train_sft / train_dpo stand-in: saves an adapter where --ckpt.output_dir says
DEEPSPEED_STAND_IN = r"""
import os, sys
args = sys.argv[1:]
assert args[-1] == "--local_rank=0", args
out = args[args.index("--ckpt.output_dir") + 1]
os.makedirs(out, exist_ok=True)
open(os.path.join(out, "adapter_model.safetensors"), "wb").write(b"stand-in")
print("trained on", args[args.index("--data.dataset") + 1], flush=True)
"""
#: the deepspeed launcher stand-in: --num_gpus N --module M ARGS -> python -m M ARGS --local_rank=0
LAUNCHER = """#!/bin/sh
shift 3
module=$1; shift
exec "{python}" -m "$module" "$@" --local_rank=0
"""


@pytest.fixture
def installed(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """openrlhf==0.11.2 'installed': its version reported, the stand-in CLIs importable,
    a deepspeed launcher on PATH."""
    pkg = tmp_path / "site" / "openrlhf"
    (pkg / "cli").mkdir(parents=True)
    (pkg / "__init__.py").write_text("")
    (pkg / "cli" / "__init__.py").write_text("")
    (pkg / "cli" / "train_ppo_ray.py").write_text(STAND_IN)
    (pkg / "cli" / "train_sft.py").write_text(DEEPSPEED_STAND_IN)
    (pkg / "cli" / "train_dpo.py").write_text(DEEPSPEED_STAND_IN)
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    (bin_dir / "deepspeed").write_text(LAUNCHER.format(python=sys.executable))
    (bin_dir / "deepspeed").chmod(0o755)
    monkeypatch.setenv("PATH", f"{bin_dir}{os.pathsep}{os.environ['PATH']}")
    monkeypatch.setenv("PYTHONPATH", str(tmp_path / "site"))
    real = importlib.metadata.version
    monkeypatch.setattr(
        importlib.metadata, "version", lambda d: "0.11.2" if d == "openrlhf" else real(d)
    )
    return tmp_path


def _config(**kw: object) -> TrainConfig:
    return TrainConfig(method="grpo", max_steps=2, batch_size=4, **kw)  # type: ignore[arg-type]


def test_plan_is_a_dry_run_with_the_command_and_the_reward_file(
    maths_dataset: Path, tmp_path: Path
) -> None:
    plan = OpenRLHFBackend().plan(maths_dataset, "/models/base", _config(), tmp_path / "run")
    assert plan.backend == "openrlhf" and plan.method == "grpo"
    assert plan.argv[:3] == ("python3", "-m", "openrlhf.cli.train_ppo_ray")
    assert (
        "def reward_func(queries, prompts, labels, **kwargs):"
        in plan.files["openrlhf/reward_func.py"]
    )
    assert plan.summary["planned_steps"] >= 2
    assert set(plan.summary["files_sha256"]) == {"prompts.jsonl", "reward_func.py"}
    assert not (tmp_path / "run").exists()  # a plan writes nothing


def test_cpu_device_is_refused(maths_dataset: Path, tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match="needs CUDA GPUs"):
        OpenRLHFBackend().plan(maths_dataset, "/m", _config(device="cpu"), tmp_path)


def test_train_without_openrlhf_fails_closed_in_one_line(
    maths_dataset: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    real = importlib.metadata.version

    def missing(dist: str) -> str:
        if dist == "openrlhf":
            raise importlib.metadata.PackageNotFoundError(dist)
        return real(dist)

    monkeypatch.setattr(importlib.metadata, "version", missing)
    with pytest.raises(OpenRLHFMissingError) as err:
        OpenRLHFBackend().train(maths_dataset, "/m", _config(), tmp_path / "run")
    assert "\n" not in str(err.value) and "GPU image" in str(err.value)
    assert not (tmp_path / "run").exists()


def test_a_different_installed_release_is_refused_even_for_a_plan(
    maths_dataset: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(importlib.metadata, "version", lambda d: "0.10.1")
    with pytest.raises(OpenRLHFVersionError, match=r"0\.10\.1 is not the pinned 0\.11\.2"):
        OpenRLHFBackend().plan(maths_dataset, "/m", _config(), tmp_path)


def test_train_writes_checked_files_runs_the_command_and_reports(
    installed: Path, maths_dataset: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("FAKE_OPENRLHF_MODE", "ok")
    out = installed / "run"
    result = OpenRLHFBackend().train(maths_dataset, "/m", _config(), out)
    assert result.status == "succeeded", result.reason
    assert result.adapter_dir == str(out / "adapter") and result.steps >= 2
    log = (out / "openrlhf" / "train.log").read_text()
    assert "rewards 1.0 0.0" in log  # the generated reward file graded like the grader
    plan = json.loads((out / "openrlhf" / "plan.json").read_text())
    assert plan["argv"][2] == "openrlhf.cli.train_ppo_ray"
    metrics = json.loads((out / "metrics.json").read_text())
    assert metrics["exit_code"] == 0 and metrics["planned_steps"] == result.steps


@pytest.mark.parametrize(
    ("mode", "reason"),
    [
        ("crash", "exited with code 3: AssertionError: simulated failure"),
        ("no-adapter", "saved no adapter"),
    ],
)
def test_train_reports_a_failed_run_with_its_reason(
    installed: Path, maths_dataset: Path, monkeypatch: pytest.MonkeyPatch, mode: str, reason: str
) -> None:
    monkeypatch.setenv("FAKE_OPENRLHF_MODE", mode)
    result = OpenRLHFBackend().train(maths_dataset, "/m", _config(), installed / "run")
    assert result.status == "failed" and result.adapter_dir is None
    assert result.reason is not None and reason in result.reason


def test_the_cfg_stand_in_has_the_train_config_fields() -> None:
    """The argv tests use Cfg; it must not drift from TrainConfig."""
    fields = set(TrainConfig.model_fields)
    assert set(Cfg.__dataclass_fields__) <= fields


def test_registered_as_the_openrlhf_backend_and_planned_through_training_plan(
    maths_dataset: Path, tmp_path: Path
) -> None:
    from rlstream.training import Backend, get_backend, plan

    backend = get_backend("openrlhf")
    assert isinstance(backend, OpenRLHFBackend) and isinstance(backend, Backend)
    assert backend.version() == "0.11.2"
    the_plan = plan(
        maths_dataset,
        output_dir=tmp_path / "run",
        config=TrainConfig(method="auto"),  # the dataset recommends grpo
        backend="openrlhf",
        base_model="/models/base",
    )
    argv = list(the_plan.argv)
    assert the_plan.method == "grpo"
    assert argv[argv.index("--actor.model_name_or_path") + 1] == "/models/base"
    assert argv[argv.index("--algo.advantage.estimator") + 1] == "group_norm"


def test_relative_paths_become_absolute_since_the_command_runs_in_the_run_folder(
    maths_dataset: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    (tmp_path / "models" / "base").mkdir(parents=True)
    monkeypatch.chdir(tmp_path)
    plan = OpenRLHFBackend().plan(maths_dataset, "models/base", _config(), Path("runs/r1"))
    argv = list(plan.argv)
    assert argv[argv.index("--actor.model_name_or_path") + 1] == str(tmp_path / "models/base")
    assert argv[argv.index("--reward.remote_url") + 1] == str(
        tmp_path / "runs/r1/openrlhf/reward_func.py"
    )


@pytest.mark.parametrize("method", ["sft", "dpo"])
def test_sft_and_dpo_run_under_the_deepspeed_launcher(
    installed: Path, maths_dataset: Path, method: str
) -> None:
    out = installed / "run"
    config = TrainConfig(method=method, max_steps=2, batch_size=4)  # type: ignore[arg-type]
    the_plan = OpenRLHFBackend().plan(maths_dataset, "/m", config, out)
    assert the_plan.method == method and the_plan.files == {}
    assert the_plan.argv[:5] == (
        "deepspeed",
        "--num_gpus",
        "1",
        "--module",
        f"openrlhf.cli.train_{method}",
    )
    result = OpenRLHFBackend().train(maths_dataset, "/m", config, out)
    assert result.status == "succeeded", result.reason
    assert result.method == method and result.adapter_dir == str(out / "adapter")
    log = (out / "openrlhf" / "train.log").read_text()
    assert f"trained on {maths_dataset}/{method}.jsonl" in log
    plan = json.loads((out / "openrlhf" / "plan.json").read_text())
    assert plan["sha256"] == {
        f"{method}.jsonl": the_plan.summary["files_sha256"][f"{method}.jsonl"]
    }


def test_a_missing_deepspeed_launcher_fails_closed(
    maths_dataset: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(importlib.metadata, "version", lambda d: "0.11.2")
    monkeypatch.setenv("PATH", str(tmp_path / "empty"))
    monkeypatch.setattr(sys, "executable", str(tmp_path / "venv" / "bin" / "python"))
    config = TrainConfig(method="sft", max_steps=2, batch_size=4)
    with pytest.raises(ConfigError, match="deepspeed launcher is not installed here"):
        OpenRLHFBackend().train(maths_dataset, "/m", config, tmp_path / "run")
    assert not (tmp_path / "run").exists()  # refused before writing anything
