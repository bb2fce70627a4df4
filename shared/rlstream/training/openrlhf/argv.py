"""The ``python3 -m openrlhf.cli.train_ppo_ray`` argv for a GRPO, GSPO or PPO run, and its
batch checks.

GRPO in OpenRLHF is ``--algo.advantage.estimator group_norm`` with
``--rollout.n_samples_per_prompt`` > 1; GSPO is the same with
``--actor.policy_loss_type gspo`` (sequence-level ratios); PPO is ``--algo.advantage.estimator
gae`` with one sample per prompt and a critic (OpenRLHF initialises it from the actor's model
when the reward is a function), colocated on the one GPU, with the KL penalty in the reward. OpenRLHF has no max-steps flag: its step count is
``len(ds) * n // train.batch_size * num_episodes * max_epochs`` (``ppo_trainer.py``). With
its defaults (train.batch_size 128, rollout.batch_size 1024) a small dataset plans 0 steps
and the Job "succeeds" without training, so the adapter sizes the batches from the dataset
and refuses any argv (including ``--backend-arg`` overrides) whose arithmetic gives 0 steps
or trips an assert OpenRLHF would only hit once the pod holds its GPUs.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from rlstream.errors import ConfigError
from rlstream.training.config import TrainConfig
from rlstream.training.openrlhf.flags import PPO, FlagError, effective, parse_args, split_args
from rlstream.training.openrlhf.pin import PPO_ENTRY

#: estimators whose baseline is the prompt's group: n_samples_per_prompt must exceed 1
GROUP_ESTIMATORS = ("rloo", "reinforce_baseline", "group_norm", "dr_grpo")


@dataclass(frozen=True)
class RunPaths:
    """Where the run's inputs and outputs live (all under the run's output_dir)."""

    prompts: Path
    reward_file: Path
    adapter: Path
    checkpoints: Path
    #: multi-turn: the agent file (``--train.agent_func_path``) replaces the reward file
    agent_file: Path | None = None


def num(value: float) -> str:
    return str(int(value)) if float(value).is_integer() else repr(float(value))


def resolved(value: float | None, name: str) -> float:
    """learning_rate / beta must be resolved (the method's default) before the argv."""
    if value is None:
        raise ConfigError(f"{name} is not resolved for the openrlhf argv")
    return value


def _kl(beta: float) -> list[str]:
    """TRL's GRPO ``beta`` (KL as a loss, k3): 0 means no reference model at all."""
    if beta == 0:
        return ["--algo.kl.init_coef", "0"]
    return [
        *("--algo.kl.init_coef", num(beta), "--algo.kl.use_loss"),
        *("--algo.kl.estimator", "k3"),
        *("--ref.num_nodes", "1", "--ref.num_gpus_per_node", "1"),
    ]


def _ppo_kl(beta: float) -> list[str]:
    """PPO's KL penalty goes into the reward (OpenRLHF's k1 default), against a reference."""
    if beta == 0:
        return ["--algo.kl.init_coef", "0"]
    return [
        *("--algo.kl.init_coef", num(beta)),
        *("--ref.num_nodes", "1", "--ref.num_gpus_per_node", "1"),
    ]


def _estimator(method: str) -> list[str]:
    return ["--algo.advantage.estimator", "gae" if method == "ppo" else "group_norm"]


def _method_args(method: str, config: TrainConfig) -> list[str]:
    """The KL flags, then what else the method adds: GSPO's loss, PPO's critic."""
    beta = resolved(config.beta, "beta")
    if method == "ppo":
        lr = num(resolved(config.learning_rate, "learning_rate"))
        critic = ("--critic.num_nodes", "1", "--critic.num_gpus_per_node", "1")
        return [*_ppo_kl(beta), *critic, "--critic.adam.lr", lr]
    loss = ["--actor.policy_loss_type", "gspo"] if method == "gspo" else []
    return [*_kl(beta), *loss]


def _reward_source(paths: RunPaths) -> list[str]:
    """The reward file, or for multi-turn the agent file (OpenRLHF then sets
    ``reward.remote_url = "agent"`` itself: the episode's reward is the agent's)."""
    if paths.agent_file is not None:
        return ["--train.agent_func_path", str(paths.agent_file)]
    return ["--reward.remote_url", str(paths.reward_file)]


def _turns(config: TrainConfig) -> int:
    """Multi-turn: max_new_tokens per turn, so the episode's budget is all its turns."""
    return config.max_turns if getattr(config, "environment", None) else 1


def base_args(
    model: str, config: TrainConfig, rows: int, paths: RunPaths, method: str = "grpo"
) -> list[str]:
    """Flags the adapter sets: one GPU, vLLM colocated and asleep between phases, LoRA."""
    n = 1 if method == "ppo" else config.num_generations
    rollout = max(1, min(rows, config.batch_size))  # prompts per rollout batch
    per_episode = max(1, rows // rollout)  # one optimiser step per rollout batch
    episodes = max(1, math.ceil(config.max_steps / per_episode))
    return [
        *("--actor.model_name_or_path", model),
        *("--data.prompt_dataset", str(paths.prompts)),
        *("--data.input_key", "prompt", "--data.label_key", "label"),
        "--data.apply_chat_template",
        *_reward_source(paths),
        *_estimator(method),
        *("--rollout.n_samples_per_prompt", str(n)),
        *("--rollout.batch_size", str(rollout)),
        *("--train.batch_size", str(rollout * n)),
        *("--train.num_episodes", str(episodes)),
        *("--train.max_epochs", "1"),
        *("--rollout.max_new_tokens", str(config.max_new_tokens * _turns(config))),
        *("--rollout.temperature", num(config.temperature)),
        *("--data.max_len", str(config.max_length)),
        *("--actor.adam.lr", num(resolved(config.learning_rate, "learning_rate"))),
        *("--ds.lora.rank", str(config.lora_rank)),
        *("--ds.lora.alpha", str(config.lora_alpha)),
        *("--ds.lora.dropout", num(config.lora_dropout)),
        *("--train.seed", str(config.seed)),
        *_method_args(method, config),
        *("--actor.num_nodes", "1", "--actor.num_gpus_per_node", "1"),
        *("--vllm.num_engines", "1", "--vllm.tensor_parallel_size", "1"),
        *("--vllm.gpu_memory_utilization", "0.5"),
        "--train.colocate_all",
        "--vllm.enable_sleep",
        "--ds.enable_sleep",
        *("--ckpt.output_dir", str(paths.adapter)),
        *("--ckpt.path", str(paths.checkpoints)),
    ]


def _backend_tokens(backend_args: Sequence[str]) -> list[str]:
    """``--backend-arg=--flag=value`` items as argv tokens (a value may hold spaces: nargs)."""
    tokens: list[str] = []
    for item in backend_args:
        flag, eq, value = item.partition("=")
        if not flag.startswith("--"):
            raise FlagError(f"--backend-arg {item!r} must look like --flag or --flag=value")
        tokens.append(flag)
        if eq:
            tokens.extend(value.split() or [""])
    return tokens


def merge(base: Sequence[str], backend_args: Sequence[str]) -> list[str]:
    """The adapter's flags with every ``--backend-arg`` flag replacing the one it names."""
    extra = split_args(_backend_tokens(backend_args))
    overridden = {flag for flag, _ in extra}
    out: list[str] = []
    for flag, values in [*(fv for fv in split_args(base) if fv[0] not in overridden), *extra]:
        out.extend([flag, *values])
    return out


class Effective:
    """Effective values of one CLI's argv (given, else the manifest default) by dest."""

    def __init__(self, parsed: dict[str, Any], cli: str = PPO) -> None:
        self.parsed = parsed
        self.cli = cli

    def int(self, dest: str) -> int:
        return int(effective(self.parsed, dest, self.cli) or 0)

    def __call__(self, dest: str) -> Any:
        return effective(self.parsed, dest, self.cli)


def _steps(get: Effective, rows: int) -> int:
    """OpenRLHF's own step formula, refusing batch sizes that make it 0 (or that its
    dataloader cannot fill)."""
    n = get.int("rollout.n_samples_per_prompt")
    estimator = get("algo.advantage.estimator")
    if estimator in GROUP_ESTIMATORS and n <= 1:
        raise FlagError(f"{estimator} needs --rollout.n_samples_per_prompt > 1 (got {n})")
    rows = min(rows, get.int("data.max_samples"))
    if rows <= 0:
        raise FlagError("the dataset has no GRPO prompts to train on")
    rollout, train_bs = get.int("rollout.batch_size"), get.int("train.batch_size")
    if rollout > rows:
        raise FlagError(f"--rollout.batch_size {rollout} exceeds the {rows} prompts")
    if rows * n < train_bs:
        raise FlagError(
            f"{rows} prompts x {n} samples = {rows * n} < --train.batch_size {train_bs}: 0 steps"
        )
    steps = rows * n // train_bs * get.int("train.num_episodes") * get.int("train.max_epochs")
    if steps <= 0:
        raise FlagError("this argv plans 0 optimiser steps")
    return steps


def _placement(get: Effective) -> None:
    """The GPU-placement asserts train_ppo_ray.py (and DeepSpeed) make at startup."""
    actors = get.int("actor.num_nodes") * get.int("actor.num_gpus_per_node")
    ring, tp = get.int("ds.ring_attn_size"), get.int("ds.tensor_parallel_size")
    n, rollout = get.int("rollout.n_samples_per_prompt"), get.int("rollout.batch_size")
    if n * rollout // get.int("rollout.micro_batch_size") < actors // ring // tp:
        raise FlagError("fewer sample micro-batches than actor processes")
    train_bs = get.int("train.batch_size")
    if (train_bs * ring * tp) % (get.int("train.micro_batch_size") * actors):
        raise FlagError(
            f"--train.batch_size {train_bs} is not a multiple of micro batch x {actors} actor GPUs"
        )
    colocated = get("train.colocate_all") or get("train.colocate_actor_ref")
    if colocated and float(get("algo.kl.init_coef")) > 0:
        ref = (
            get.int("ref.num_nodes"),
            get.int("ref.num_nodes") * get.int("ref.num_gpus_per_node"),
        )
        if ref != (get.int("actor.num_nodes"), actors):
            raise FlagError("colocated, the reference model must match the actor's nodes/GPUs")
    engines = get.int("vllm.num_engines")
    sync_colocated = get("train.colocate_all") and not get("train.async_enable") and engines
    if sync_colocated and actors != engines * get.int("vllm.tensor_parallel_size"):
        raise FlagError("with --train.colocate_all, actor GPUs must equal vLLM engines x TP")


def check_batches(parsed: dict[str, Any], rows: int) -> int:
    """Refuse arithmetic that trains 0 steps or fails OpenRLHF's startup asserts;
    returns the number of optimiser steps OpenRLHF will plan."""
    get = Effective(parsed)
    steps = _steps(get, rows)
    _placement(get)
    return steps


def build_argv(
    model: str, config: TrainConfig, rows: int, paths: RunPaths, method: str = "grpo"
) -> tuple[list[str], int]:
    """(``python3 -m ...`` argv, planned steps); every flag checked against the manifest."""
    args = merge(base_args(model, config, rows, paths, method), config.backend_args)
    parsed = parse_args(args)
    steps = check_batches(parsed, rows)
    return ["python3", "-m", PPO_ENTRY, *args], steps
