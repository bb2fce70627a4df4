"""The OpenRLHF argv: golden per method, every flag checked against the pinned manifest,
batch arithmetic that would train 0 steps refused, a different installed release refused."""

from __future__ import annotations

import importlib.metadata
import json
from pathlib import Path

import pytest
from _helpers_openrlhf import Cfg, write_maths_dataset

from rlstream.errors import ConfigError
from rlstream.training.openrlhf import pin
from rlstream.training.openrlhf.flags import FlagError, parse_args
from rlstream.training.openrlhf.pin import (
    OPENRLHF_VERSION,
    OpenRLHFMissingError,
    OpenRLHFVersionError,
    check_installed,
)
from rlstream.training.openrlhf.prepare import prepare

pytestmark = pytest.mark.unit

GRPO_GOLDEN = [
    "python3", "-m", "openrlhf.cli.train_ppo_ray",
    "--actor.model_name_or_path", "/models/base",
    "--data.prompt_dataset", "<OUT>/openrlhf/prompts.jsonl",
    "--data.input_key", "prompt", "--data.label_key", "label", "--data.apply_chat_template",
    "--reward.remote_url", "<OUT>/openrlhf/reward_func.py",
    "--algo.advantage.estimator", "group_norm",
    "--rollout.n_samples_per_prompt", "4",
    "--rollout.batch_size", "4", "--train.batch_size", "16",
    "--train.num_episodes", "4", "--train.max_epochs", "1",
    "--rollout.max_new_tokens", "128", "--rollout.temperature", "1",
    "--data.max_len", "1024",
    "--actor.adam.lr", "1e-06", "--ds.lora.rank", "8", "--ds.lora.alpha", "16",
    "--ds.lora.dropout", "0",
    "--train.seed", "7", "--algo.kl.init_coef", "0",
    "--actor.num_nodes", "1", "--actor.num_gpus_per_node", "1",
    "--vllm.num_engines", "1", "--vllm.tensor_parallel_size", "1",
    "--vllm.gpu_memory_utilization", "0.5",
    "--train.colocate_all", "--vllm.enable_sleep", "--ds.enable_sleep",
    "--ckpt.output_dir", "<OUT>/adapter", "--ckpt.path", "<OUT>/openrlhf/checkpoints",
]  # fmt: skip


def _argv(ds: Path, out: Path, cfg: Cfg, method: str = "grpo") -> list[str]:
    plan = prepare(ds, "/models/base", method, cfg, out)
    return [a.replace(str(out), "<OUT>") for a in plan.argv]


def test_grpo_argv_golden(maths_dataset: Path, tmp_path: Path) -> None:
    assert _argv(maths_dataset, tmp_path, Cfg()) == GRPO_GOLDEN
    # auto follows the dataset's recommendation, which is grpo for these mixed groups
    assert _argv(maths_dataset, tmp_path, Cfg(), method="auto") == GRPO_GOLDEN
    plan = prepare(maths_dataset, "/models/base", "grpo", Cfg(), tmp_path)
    rows = json.loads((maths_dataset / "manifest.json").read_text())["counts"]["grpo_rows"]
    assert 4 <= rows == plan.summary["prompts"]  # some task keys are held out for evaluation
    # one rollout batch of 4 prompts x 4 samples = one step; 4 episodes reach max_steps 4
    assert plan.steps == rows // 4 * 4 == 4
    assert [s.split("@")[0] for s in plan.summary["reward_specs"]] == ["gsm8k"]
    assert plan.summary["skipped_rows"] == {}


def _deepspeed_golden(cli: str) -> list[str]:
    data = {
        "train_sft": [
            *("--data.dataset", "<DS>/sft.jsonl", "--data.input_key", "messages"),
            *("--data.apply_chat_template", "--data.multiturn"),
        ],
        "train_dpo": [
            *("--data.dataset", "<DS>/dpo.jsonl", "--data.prompt_key", "prompt"),
            *("--data.chosen_key", "chosen", "--data.rejected_key", "rejected"),
            "--data.apply_chat_template",
        ],
    }[cli]
    return [
        "deepspeed", "--num_gpus", "1", "--module", f"openrlhf.cli.{cli}",
        "--model.model_name_or_path", "/models/base",
        *data,
        "--data.max_len", "1024",
        "--train.micro_batch_size", "4", "--train.batch_size", "8",
        "--train.max_epochs", "4",
        "--adam.lr", "1e-06",
        "--ds.lora.rank", "8", "--ds.lora.alpha", "16", "--ds.lora.dropout", "0",
        "--train.seed", "7",
        "--ckpt.output_dir", "<OUT>/adapter", "--ckpt.path", "<OUT>/openrlhf/checkpoints",
        *(["--model.beta", "0.1"] if cli == "train_dpo" else []),
    ]  # fmt: skip


@pytest.mark.parametrize("method", ["sft", "dpo"])
def test_sft_and_dpo_argv_goldens(maths_dataset: Path, tmp_path: Path, method: str) -> None:
    cfg = Cfg(beta=0.1, gradient_accumulation_steps=2)  # global batch 8 = 4 x 2
    plan = prepare(maths_dataset, "/models/base", method, cfg, tmp_path)
    argv = [
        a.replace(str(tmp_path), "<OUT>").replace(str(maths_dataset), "<DS>") for a in plan.argv
    ]
    assert argv == _deepspeed_golden(f"train_{method}")
    rows = json.loads((maths_dataset / "manifest.json").read_text())["counts"][f"{method}_rows"]
    assert rows >= 8 and plan.summary["rows"] == rows
    # 1 step per epoch (rows // 8), so 4 epochs reach max_steps 4
    assert plan.steps == 4 and plan.files == {}
    assert plan.inputs == {maths_dataset / f"{method}.jsonl": _sha256(maths_dataset, method)}


def _sha256(ds: Path, method: str) -> str:
    return str(json.loads((ds / "manifest.json").read_text())["files"][f"{method}.jsonl"]["sha256"])


@pytest.mark.parametrize(
    ("method", "cfg", "message"),
    [
        ("sft", Cfg(batch_size=64), "rows < --train.batch_size 64: 0 steps"),
        ("dpo", Cfg(beta=0.1, batch_size=3, backend_args=("--train.batch_size=4",)), "multiple"),
        ("dpo", Cfg(beta=0.0), "DPO needs --model.beta > 0"),
        ("sft", Cfg(backend_args=("--actor.adam.lr=1e-5",)), "not an OpenRLHF 0.11.2 flag"),
        ("sft", Cfg(backend_args=("--adam.l=1e-5",)), "abbreviation of --adam.lr"),
        ("dpo", Cfg(beta=0.1, backend_args=("--model.ipo=1",)), "abbreviation of --model.ipo_"),
    ],
)
def test_sft_and_dpo_refusals(
    maths_dataset: Path, tmp_path: Path, method: str, cfg: Cfg, message: str
) -> None:
    with pytest.raises(FlagError, match=message):
        prepare(maths_dataset, "/m", method, cfg, tmp_path)


def test_auto_on_a_dataset_that_recommends_nothing_is_refused(tmp_path: Path) -> None:
    ds = write_maths_dataset(tmp_path / "ds", tasks=0)  # no rollouts: no method
    with pytest.raises(ConfigError, match="the dataset recommends no training method"):
        prepare(ds, "/models/base", "auto", Cfg(), tmp_path / "out")


def test_beta_turns_on_the_k3_kl_loss_with_a_colocated_reference(
    maths_dataset: Path, tmp_path: Path
) -> None:
    argv = _argv(maths_dataset, tmp_path, Cfg(beta=0.04))
    tail = argv[argv.index("--algo.kl.init_coef") :][:9]
    assert tail == [
        "--algo.kl.init_coef", "0.04", "--algo.kl.use_loss", "--algo.kl.estimator", "k3",
        "--ref.num_nodes", "1", "--ref.num_gpus_per_node", "1",
    ]  # fmt: skip


def test_backend_arg_overrides_and_is_validated(maths_dataset: Path, tmp_path: Path) -> None:
    cfg = Cfg(backend_args=("--actor.policy_loss_type=gspo", "--rollout.temperature=0.7"))
    argv = _argv(maths_dataset, tmp_path, cfg)
    assert argv[argv.index("--actor.policy_loss_type") + 1] == "gspo"
    assert argv.count("--rollout.temperature") == 1
    assert argv[argv.index("--rollout.temperature") + 1] == "0.7"
    # a KL coefficient without a reference model that fits beside the actor: refused
    with pytest.raises(FlagError, match="reference model must match"):
        _argv(maths_dataset, tmp_path, Cfg(backend_args=("--algo.kl.init_coef=0.001",)))


@pytest.mark.parametrize(
    ("backend_arg", "message"),
    [
        ("--actor.learning_rate=1e-5", "not an OpenRLHF 0.11.2 flag"),  # a pre-0.10.2 name
        ("--pretrain=/m", "not an OpenRLHF"),
        ("--actor.adam.l=1e-5", "abbreviation of --actor.adam.lr"),  # argparse would accept
        ("--rollout.n_samples=8", "abbreviation of --rollout.n_samples_per_prompt"),
        ("--actor.policy_loss_type=grpo", "not one of"),
        ("--train.seed=seven", "not a valid int"),
        ("--reward.clip_range=-1", "takes 2 value"),
        ("--train.colocate_all=yes", "takes 0 value"),
        ("data.max_len=9", "must look like --flag"),
    ],
)
def test_bad_backend_args_are_refused(
    maths_dataset: Path, tmp_path: Path, backend_arg: str, message: str
) -> None:
    with pytest.raises(FlagError, match=message):
        prepare(maths_dataset, "/m", "grpo", Cfg(backend_args=(backend_arg,)), tmp_path)


def test_parse_args_refuses_duplicates_and_stray_values() -> None:
    with pytest.raises(FlagError, match="given twice"):
        parse_args(["--train.seed", "1", "--train.seed", "2"])
    with pytest.raises(FlagError, match="before any flag"):
        parse_args(["stray", "--train.seed", "1"])
    assert parse_args(["--reward.clip_range", "-5", "5"]) == {"reward.clip_range": [-5.0, 5.0]}
    # argparse reads "-1e5" as an (unknown) option, not as a negative number: so do we
    with pytest.raises(FlagError, match="takes 2 value"):
        parse_args(["--reward.clip_range", "-1e5", "5"])
    with pytest.raises(FlagError, match="-1e5 is not an OpenRLHF"):
        parse_args(["--train.seed", "1", "-1e5"])
    with pytest.raises(FlagError, match="not a finite number"):
        parse_args(["--actor.adam.lr", "nan"])


@pytest.mark.parametrize(
    ("cfg", "message"),
    [
        (Cfg(num_generations=1), "num_generations >= 2"),
        (Cfg(backend_args=("--rollout.n_samples_per_prompt=1",)), "n_samples_per_prompt > 1"),
        (Cfg(backend_args=("--rollout.batch_size=99",)), "exceeds the [0-9] prompts"),
        (Cfg(backend_args=("--train.batch_size=128",)), "0 steps"),
        (Cfg(backend_args=("--train.num_episodes=0",)), "0 optimiser steps"),
        (Cfg(backend_args=("--data.max_samples=3",)), "exceeds the 3 prompts"),
        (Cfg(backend_args=("--actor.num_gpus_per_node=2",)), "vLLM engines x TP"),
        (
            Cfg(beta=0.1, backend_args=("--ref.num_gpus_per_node=8",)),
            "reference model must match the actor",
        ),
        (
            Cfg(backend_args=("--train.micro_batch_size=3",)),
            "not a multiple of micro batch",
        ),
    ],
)
def test_batch_arithmetic_refusals(
    maths_dataset: Path, tmp_path: Path, cfg: Cfg, message: str
) -> None:
    with pytest.raises(Exception, match=message):
        prepare(maths_dataset, "/m", "grpo", cfg, tmp_path)


def test_wrong_installed_version_is_refused(monkeypatch: pytest.MonkeyPatch) -> None:
    real = importlib.metadata.version

    def fake(dist: str) -> str:
        return "0.11.1" if dist == "openrlhf" else real(dist)

    monkeypatch.setattr(importlib.metadata, "version", fake)
    with pytest.raises(OpenRLHFVersionError, match=r"0\.11\.1 is not the pinned 0\.11\.2"):
        check_installed(required=False)
    monkeypatch.setattr(importlib.metadata, "version", lambda d: OPENRLHF_VERSION)
    assert check_installed(required=True) == OPENRLHF_VERSION


def test_missing_openrlhf_fails_closed_only_when_required(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(pin, "installed_version", lambda: None)
    assert check_installed(required=False) is None
    with pytest.raises(OpenRLHFMissingError, match="GPU image"):
        check_installed(required=True)
