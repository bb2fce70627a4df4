"""TrainConfig -> the keyword arguments of TRL's SFTConfig / DPOConfig / GRPOConfig.

CPU runs train in float32 (``bf16=False``: TRL's bf16 default made CPU steps ~3x slower),
with ``use_cpu``; one GPU uses bf16 when it has it. SFT batches are padding-free when
:data:`SFT_PADDING_FREE` or a backend arg says so. ``--backend-arg``
flags (``--name=value``) override any field of the TRL config; unknown names are refused.

GSPO is TRL's GRPOTrainer with sequence-level importance ratios
(``importance_sampling_level="sequence"``) and the paper's setting (TRL's paper index:
``loss_type="grpo"``, clip 3e-4 / 4e-4, four optimiser steps per generation, so the ratio
is not 1 and the method differs from GRPO). PPO is refused here: see :data:`PPO_REFUSAL`.
"""

from __future__ import annotations

import dataclasses
from pathlib import Path
from typing import Any

import orjson

from rlstream.errors import ConfigError
from rlstream.training.config import TrainConfig, effective

CONFIG_CLASSES = {
    "sft": "SFTConfig",
    "dpo": "DPOConfig",
    "grpo": "GRPOConfig",
    "gspo": "GRPOConfig",
}
TRAINER_CLASSES = {
    "sft": "SFTTrainer",
    "dpo": "DPOTrainer",
    "grpo": "GRPOTrainer",
    "gspo": "GRPOTrainer",
}
#: SFT batches as one flattened sequence, position ids restarting per row, no padding
#: (``--backend-arg=--padding_free=true`` turns it on). Exact: transformers 5 builds a
#: block-diagonal causal mask from the position ids (sdpa, eager and flash kernels; it needs
#: ``use_cache=False``, which TRL's SFT loss passes), TRL's collator drops each row's first
#: label and the loss divides by the same label count. TRL's ``max_length`` is then None
#: (TRL refuses it without packing): rows are already cut to it by
#: :mod:`rlstream.training.builtin.fit`. Off by default until its CPU gain is measured
#: (docs/training.md). DPO's padding-free is disabled in TRL 1.16; GRPO has none.
SFT_PADDING_FREE = False
#: GSPO's paper setting (Zheng et al. 2025, v2 section 5.1, as TRL's paper index gives it)
GSPO_KWARGS: dict[str, Any] = {
    "importance_sampling_level": "sequence",
    "loss_type": "grpo",
    "epsilon": 3e-4,
    "epsilon_high": 4e-4,
}
#: optimiser steps per generation batch under GSPO (times gradient_accumulation_steps)
GSPO_STEPS_PER_GENERATION = 4
PPO_REFUSAL = (
    "the builtin backend does not run PPO: TRL's PPOTrainer (trl.experimental.ppo) scores "
    "samples with a reward *model* (a sequence classifier), not a reward function, so it "
    "cannot use the dataset's verifier reward; run PPO (a critic with GAE) with "
    "--backend openrlhf on a GPU, or train --method grpo|gspo here"
)


def config_class(method: str) -> Any:
    if method not in CONFIG_CLASSES:
        raise ConfigError(PPO_REFUSAL if method == "ppo" else f"unknown method {method!r}")
    import trl

    return getattr(trl, CONFIG_CLASSES[method])


def parse_backend_args(args: tuple[str, ...], fields: set[str]) -> dict[str, Any]:
    """``("--max_grad_norm=0.5", "--packing=true")`` -> typed overrides, names checked."""
    out: dict[str, Any] = {}
    for raw in args:
        if not raw.startswith("--") or "=" not in raw:
            raise ConfigError(f"backend arg {raw!r}: expected --name=value")
        name, _, text = raw[2:].partition("=")
        name = name.replace("-", "_")
        if name not in fields:
            raise ConfigError(
                f"backend arg {raw!r}: the builtin backend's TRL config has no {name}"
            )
        try:
            value: Any = orjson.loads(text)
        except orjson.JSONDecodeError:
            value = text  # a bare string (e.g. --lr_scheduler_type=cosine)
        out[name] = value
    return out


def trl_kwargs(config: TrainConfig, output_dir: Path, device: str, bf16: bool) -> dict[str, Any]:
    """Every TRL config field rlstream sets, then the user's ``backend_args`` on top."""
    if config.method == "ppo":
        raise ConfigError(PPO_REFUSAL)
    lr, beta = effective(config)
    kw: dict[str, Any] = {
        "output_dir": str(output_dir / "trainer"),
        "max_steps": config.max_steps,
        "learning_rate": lr,
        "per_device_train_batch_size": config.batch_size,
        "gradient_accumulation_steps": config.gradient_accumulation_steps,
        "seed": config.seed,
        "data_seed": config.seed,
        "logging_steps": config.log_every,
        "save_strategy": "no",
        "report_to": "none",
        "disable_tqdm": True,
        "bf16": bf16,
        "fp16": False,
        "use_cpu": device == "cpu",
        "dataloader_num_workers": 0,
        # TRL 1.x turns activation checkpointing on by default: it only costs time on a
        # 135M model, whose activations fit anywhere
        "activation_checkpointing": False,
    }
    if config.method == "sft":
        kw |= {"max_length": config.max_length, "assistant_only_loss": True, "packing": False}
        if SFT_PADDING_FREE:
            kw["padding_free"] = True
    elif config.method == "dpo":
        kw |= {"max_length": config.max_length, "beta": beta}
    else:
        if config.batch_size % config.num_generations:
            raise ConfigError(
                f"{config.method.upper()}: batch_size {config.batch_size} must be a multiple of num_generations "
                f"{config.num_generations} (each prompt's group is sampled in one batch)"
            )
        # multi-turn: max_new_tokens per turn, the episode's completion budget all turns
        turns = config.max_turns if config.environment is not None else 1
        kw |= {
            "num_generations": config.num_generations,
            "max_completion_length": config.max_new_tokens * turns,
            "temperature": config.temperature,
            "beta": beta,
        }
        if config.method == "gspo":
            steps = GSPO_STEPS_PER_GENERATION * config.gradient_accumulation_steps
            kw |= GSPO_KWARGS | {"steps_per_generation": steps}
    fields = {f.name for f in dataclasses.fields(config_class(config.method))}
    overrides = parse_backend_args(config.backend_args, fields)
    kw |= overrides
    if config.method == "sft" and kw.get("padding_free") and not kw.get("packing"):
        # TRL refuses max_length without packing here; rows are already cut to it (fit.py)
        kw["max_length"] = overrides.get("max_length")
    return kw


def as_argv(kwargs: dict[str, Any]) -> tuple[str, ...]:
    """The effective TRL config as ``--name=value`` (recorded in run.json, hashed); the
    output dir is left out so the same run hashes the same wherever it writes."""
    return tuple(
        f"--{k}={v if isinstance(v, str) else orjson.dumps(v).decode()}"
        for k, v in sorted(kwargs.items())
        if k != "output_dir"
    )
