"""OpenRLHF GSPO and PPO argv goldens (the pinned 0.11.2 train_ppo_ray flags): GSPO is
GRPO with ``--actor.policy_loss_type gspo``; PPO is GAE with a colocated critic, one sample
per prompt and the KL in the reward. Misspelled overrides are refused."""

from __future__ import annotations

from pathlib import Path

import pytest

from rlstream.errors import ConfigError
from rlstream.training.config import TrainConfig
from rlstream.training.openrlhf import OpenRLHFBackend
from rlstream.training.openrlhf.flags import FlagError
from rlstream.training.openrlhf.prepare import prepare

pytestmark = pytest.mark.unit

COMMON_HEAD = [
    "python3", "-m", "openrlhf.cli.train_ppo_ray",
    "--actor.model_name_or_path", "/models/base",
    "--data.prompt_dataset", "<OUT>/openrlhf/prompts.jsonl",
    "--data.input_key", "prompt", "--data.label_key", "label", "--data.apply_chat_template",
    "--reward.remote_url", "<OUT>/openrlhf/reward_func.py",
]  # fmt: skip
COMMON_TAIL = [
    "--actor.num_nodes", "1", "--actor.num_gpus_per_node", "1",
    "--vllm.num_engines", "1", "--vllm.tensor_parallel_size", "1",
    "--vllm.gpu_memory_utilization", "0.5",
    "--train.colocate_all", "--vllm.enable_sleep", "--ds.enable_sleep",
    "--ckpt.output_dir", "<OUT>/adapter", "--ckpt.path", "<OUT>/openrlhf/checkpoints",
]  # fmt: skip


def _middle(n: int, train_bs: int, lr: str) -> list[str]:
    return [
        "--rollout.n_samples_per_prompt", str(n),
        "--rollout.batch_size", "4", "--train.batch_size", str(train_bs),
        "--train.num_episodes", "4", "--train.max_epochs", "1",
        "--rollout.max_new_tokens", "128", "--rollout.temperature", "1",
        "--data.max_len", "1024",
        "--actor.adam.lr", lr, "--ds.lora.rank", "8", "--ds.lora.alpha", "16",
        "--ds.lora.dropout", "0", "--train.seed", "7",
    ]  # fmt: skip


GSPO_GOLDEN = [
    *COMMON_HEAD,
    *("--algo.advantage.estimator", "group_norm"),
    *_middle(4, 16, "1e-06"),
    *("--algo.kl.init_coef", "0", "--actor.policy_loss_type", "gspo"),
    *COMMON_TAIL,
]
PPO_GOLDEN = [
    *COMMON_HEAD,
    *("--algo.advantage.estimator", "gae"),
    *_middle(1, 4, "1e-06"),
    *("--algo.kl.init_coef", "0.01", "--ref.num_nodes", "1", "--ref.num_gpus_per_node", "1"),
    *("--critic.num_nodes", "1", "--critic.num_gpus_per_node", "1", "--critic.adam.lr", "1e-06"),
    *COMMON_TAIL,
]


def _cfg(method: str, **kw: object) -> TrainConfig:
    values: dict[str, object] = {
        "method": method, "max_steps": 4, "learning_rate": 1e-6, "batch_size": 4,
        "max_length": 1024, "seed": 7, "num_generations": 4, "max_new_tokens": 128,
        "temperature": 1.0,
    }  # fmt: skip
    return TrainConfig.model_validate(values | kw)


def _argv(ds: Path, out: Path, cfg: TrainConfig) -> tuple[list[str], dict[str, object]]:
    """Through the backend's plan: beta / learning rate left unset take the method's default."""
    p = OpenRLHFBackend().plan(ds, "/models/base", cfg, out)
    return [a.replace(str(out), "<OUT>") for a in p.argv], p.summary


def test_gspo_argv_golden(maths_dataset: Path, tmp_path: Path) -> None:
    argv, summary = _argv(maths_dataset, tmp_path, _cfg("gspo"))
    assert argv == GSPO_GOLDEN
    assert summary["method"] == "gspo" and summary["planned_steps"] == 4


def test_ppo_argv_golden_has_a_critic_and_one_sample_per_prompt(
    maths_dataset: Path, tmp_path: Path
) -> None:
    argv, summary = _argv(maths_dataset, tmp_path, _cfg("ppo"))  # beta: PPO's default 0.01
    assert argv == PPO_GOLDEN
    assert summary["method"] == "ppo" and summary["num_generations"] == 1
    assert summary["planned_steps"] == 4


def test_misspelled_override_is_refused(maths_dataset: Path, tmp_path: Path) -> None:
    bad = _cfg("gspo", backend_args=("--actor.policy_loss_typ=gspo",))
    with pytest.raises(FlagError, match="policy_loss_typ"):
        _argv(maths_dataset, tmp_path, bad)
    wrong_choice = _cfg("grpo", backend_args=("--actor.policy_loss_type=gspoo",))
    with pytest.raises(FlagError, match="gspoo"):
        _argv(maths_dataset, tmp_path, wrong_choice)


def test_environment_runs_stay_grpo(maths_dataset: Path, tmp_path: Path) -> None:
    cfg = _cfg("ppo", environment="python")
    with pytest.raises(ConfigError, match="GRPO only"):
        prepare(maths_dataset, "/models/base", "ppo", cfg, tmp_path)


def test_gspo_differs_from_grpo_by_the_loss_flag_only(maths_dataset: Path, tmp_path: Path) -> None:
    grpo, _ = _argv(maths_dataset, tmp_path, _cfg("grpo"))
    at = GSPO_GOLDEN.index("--actor.policy_loss_type")
    assert grpo == GSPO_GOLDEN[:at] + GSPO_GOLDEN[at + 2 :]
