"""The Hydra overrides of ``python3 -m verl.trainer.main_ppo`` for a run, and its checks.

GRPO is ``algorithm.adv_estimator=grpo`` with ``actor_rollout_ref.rollout.n`` > 1; GSPO
adds ``actor_rollout_ref.actor.policy_loss.loss_mode=gspo`` (sequence-level ratios); PPO is
``adv_estimator=gae`` with a critic (verl enables one for ``gae``). verl plans
``min(total_training_steps, rows // data.train_batch_size * total_epochs)`` steps
(``trainer_base.py``: a drop-last dataloader), so a prompt batch larger than the dataset
trains 0 steps and the Job "succeeds"; the adapter sizes the batch from the dataset and
refuses any overrides (``--backend-arg`` included) whose arithmetic gives 0 steps or fails
the checks ``verl.utils.config.validate_config`` makes once the pod holds its GPUs.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from rlstream.errors import ConfigError
from rlstream.training.config import TrainConfig
from rlstream.training.verl.keys import (
    OverrideError,
    render,
    split_override,
)

#: method -> advantage estimator; the methods verl's PPO trainer runs here
ESTIMATORS = {"grpo": "grpo", "gspo": "grpo", "ppo": "gae"}
#: why the others are refused
UNSUPPORTED = {
    "sft": "verl's SFT trainer is a separate entry point with its own config tree; "
    "train SFT with --backend builtin or openrlhf",
    "dpo": "verl 0.9.1 has no DPO trainer; train DPO with --backend builtin or openrlhf",
}
#: estimators whose baseline is the prompt's group: rollout.n must exceed 1
GROUP_ESTIMATORS = ("grpo", "grpo_passk", "grpo_vectorized", "rloo", "rloo_vectorized", "opo")
#: GSPO (Zheng et al. 2025): sequence-level clipping range and aggregation of the paper
GSPO = {
    "actor_rollout_ref.actor.policy_loss.loss_mode": "gspo",
    "actor_rollout_ref.actor.loss_agg_mode": "seq-mean-token-mean",
    "actor_rollout_ref.actor.clip_ratio_low": 0.0003,
    "actor_rollout_ref.actor.clip_ratio_high": 0.0004,
}
REWARD_PATH = "reward.custom_reward_function.path"
REWARD_NAME = "reward.custom_reward_function.name"
REWARD_FUNCTION = "compute_score"
ACTOR, ROLLOUT, REF = (
    "actor_rollout_ref.actor",
    "actor_rollout_ref.rollout",
    "actor_rollout_ref.ref",
)


@dataclass(frozen=True)
class RunPaths:
    """Where the run's inputs and outputs live (all under the run's output_dir)."""

    train_file: Path
    reward_file: Path
    checkpoints: Path


def resolved(value: float | None, name: str) -> float:
    """learning_rate / beta must be resolved (the method's default) before the overrides."""
    if value is None:
        raise ConfigError(f"{name} is not resolved for the verl overrides")
    return value


def estimator(method: str) -> str:
    if method in UNSUPPORTED:
        raise ConfigError(f"the verl backend does not train {method}: {UNSUPPORTED[method]}")
    if method not in ESTIMATORS:
        raise ConfigError(f"unknown method {method!r} for the verl backend")
    return ESTIMATORS[method]


def _kl(method: str, beta: float) -> dict[str, Any]:
    """GRPO/GSPO: TRL's ``beta`` as a k3 KL loss (0: no reference model). PPO: the KL
    penalty in the reward (verl's fixed controller), as in classic RLHF PPO."""
    if beta == 0:
        return {f"{ACTOR}.use_kl_loss": False, "algorithm.use_kl_in_reward": False}
    if method == "ppo":
        return {"algorithm.use_kl_in_reward": True, "algorithm.kl_ctrl.kl_coef": beta}
    return {
        f"{ACTOR}.use_kl_loss": True,
        f"{ACTOR}.kl_loss_coef": beta,
        f"{ACTOR}.kl_loss_type": "low_var_kl",
    }


def samples_per_prompt(method: str, config: TrainConfig) -> int:
    """GRPO/GSPO: a group of ``num_generations``; PPO: one (its baseline is the critic),
    as the OpenRLHF backend's PPO."""
    return 1 if method == "ppo" else config.num_generations


def _critic(model: str, config: TrainConfig, lr: float) -> dict[str, Any]:
    """PPO's value model: the base model with its own LoRA, one sample per micro batch."""
    return {
        "critic.model.path": model,
        "critic.model.lora_rank": config.lora_rank,
        "critic.model.lora_alpha": config.lora_alpha,
        "critic.optim.lr": lr,
        "critic.ppo_micro_batch_size_per_gpu": 1,
    }


def base_overrides(
    model: str, method: str, config: TrainConfig, rows: int, paths: RunPaths, name: str
) -> dict[str, Any]:
    """What the adapter sets: one GPU, vLLM colocated (verl's hybrid engine), LoRA, one
    optimiser step per prompt batch, a checkpoint at the last step (the adapter's source)."""
    n = samples_per_prompt(method, config)
    batch = max(1, min(rows, config.batch_size))  # prompts per step
    per_epoch = max(1, rows // batch)
    lr = resolved(config.learning_rate, "learning_rate")
    out: dict[str, Any] = {
        "algorithm.adv_estimator": estimator(method),
        "data.train_files": str(paths.train_file),
        "data.val_files": str(paths.train_file),
        "data.prompt_key": "prompt",
        "data.train_batch_size": batch,
        "data.max_prompt_length": config.max_length,
        "data.max_response_length": config.max_new_tokens,
        "data.seed": config.seed,
        "actor_rollout_ref.model.path": model,
        "actor_rollout_ref.model.lora_rank": config.lora_rank,
        "actor_rollout_ref.model.lora_alpha": config.lora_alpha,
        f"{ACTOR}.optim.lr": lr,
        f"{ACTOR}.ppo_mini_batch_size": batch,
        f"{ACTOR}.ppo_micro_batch_size_per_gpu": n,
        f"{ROLLOUT}.name": "vllm",
        f"{ROLLOUT}.n": n,
        f"{ROLLOUT}.temperature": config.temperature,
        f"{ROLLOUT}.tensor_model_parallel_size": 1,
        f"{ROLLOUT}.gpu_memory_utilization": 0.5,
        f"{ROLLOUT}.load_format": "safetensors",
        f"{ROLLOUT}.seed": config.seed,
        f"{ROLLOUT}.log_prob_micro_batch_size_per_gpu": n,
        f"{REF}.log_prob_micro_batch_size_per_gpu": n,
        **_kl(method, resolved(config.beta, "beta")),
        REWARD_PATH: str(paths.reward_file),
        REWARD_NAME: REWARD_FUNCTION,
        "trainer.n_gpus_per_node": 1,
        "trainer.nnodes": 1,
        "trainer.total_epochs": max(1, math.ceil(config.max_steps / per_epoch)),
        "trainer.total_training_steps": config.max_steps,
        "trainer.save_freq": config.max_steps,
        "trainer.test_freq": -1,
        "trainer.val_before_train": False,
        "trainer.resume_mode": "disable",
        "trainer.logger": ["console"],
        "trainer.project_name": "rlstream",
        "trainer.experiment_name": name,
        "trainer.default_local_dir": str(paths.checkpoints),
    }
    if method == "gspo":
        out.update(GSPO)
    if method == "ppo":
        out.update(_critic(model, config, lr))
    return out


def merge(base: dict[str, Any], backend_args: Sequence[str]) -> list[str]:
    """The adapter's overrides, each ``--backend-arg=key=value`` replacing the key it names
    (the reward function's path and name are rlstream's and cannot be replaced)."""
    extra: dict[str, str] = {}
    for item in backend_args:
        key, raw = split_override(item)
        if key in (REWARD_PATH, REWARD_NAME, "custom_reward_function.path"):
            raise OverrideError(f"{key} is the rlstream reward file's; it cannot be overridden")
        if key in extra:
            raise OverrideError(f"--backend-arg {key} is given twice")
        extra[key] = raw
    out = [f"{k}={render(v)}" for k, v in base.items() if k not in extra]
    return out + [f"{k}={raw}" for k, raw in extra.items()]
