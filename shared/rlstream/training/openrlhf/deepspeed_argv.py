"""SFT and DPO: ``deepspeed --num_gpus 1 --module openrlhf.cli.train_sft|train_dpo`` argv.

These are OpenRLHF's DeepSpeed CLIs (not Ray), each with its own flags (``--adam.lr``, not
``--actor.adam.lr``), checked against its own manifest. They read the dataset's
``sft.jsonl`` / ``dpo.jsonl`` as they are (already sha256-verified against the manifest):
SFT rows are whole conversations (``--data.input_key messages --data.multiturn``: loss on
every assistant turn), DPO rows ``prompt``/``chosen``/``rejected`` message lists.

Neither has a max-steps flag. SFT plans ``len(dataloader) * max_epochs // accumulation``
steps (``train_sft.py``, micro batches with ``drop_last``), DPO
``ceil(max_epochs * (len(ds) // train.batch_size))`` (``train_dpo.py``): both are 0 when the
dataset is smaller than one batch, which is refused here.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from rlstream.training.config import TrainConfig
from rlstream.training.openrlhf.argv import Effective, merge, num, resolved
from rlstream.training.openrlhf.flags import DPO, SFT, FlagError, parse_args


@dataclass(frozen=True)
class DeepSpeedPaths:
    data: Path
    adapter: Path
    checkpoints: Path


def planned_steps(cli: str, rows: int, batch: int, micro: int, epochs: int) -> int:
    """Optimiser steps by each CLI's own formula (one GPU): train_sft.py
    ``len(dataloader) * max_epochs // accumulated_gradient`` (micro batches, drop_last);
    train_dpo.py ``ceil(max_epochs * (len(dataset) // train.batch_size))``."""
    if cli == SFT:
        return (rows // micro) * epochs // max(1, batch // micro)
    return epochs * (rows // batch)


def _data_flags(cli: str, data: Path) -> list[str]:
    if cli == SFT:
        return [
            *("--data.dataset", str(data), "--data.input_key", "messages"),
            *("--data.apply_chat_template", "--data.multiturn"),
        ]
    return [
        *("--data.dataset", str(data), "--data.prompt_key", "prompt"),
        *("--data.chosen_key", "chosen", "--data.rejected_key", "rejected"),
        "--data.apply_chat_template",
    ]


def base_args(
    cli: str, model: str, config: TrainConfig, rows: int, paths: DeepSpeedPaths
) -> list[str]:
    """One GPU; per-device batch = batch_size, global = batch_size x accumulation (as TRL)."""
    micro = config.batch_size
    batch = micro * config.gradient_accumulation_steps
    per_epoch = max(1, planned_steps(cli, rows, batch, micro, 1))
    epochs = max(1, math.ceil(config.max_steps / per_epoch))
    args = [
        *("--model.model_name_or_path", model),
        *_data_flags(cli, paths.data),
        *("--data.max_len", str(config.max_length)),
        *("--train.micro_batch_size", str(micro), "--train.batch_size", str(batch)),
        *("--train.max_epochs", str(epochs)),
        *("--adam.lr", num(resolved(config.learning_rate, "learning_rate"))),
        *("--ds.lora.rank", str(config.lora_rank), "--ds.lora.alpha", str(config.lora_alpha)),
        *("--ds.lora.dropout", num(config.lora_dropout)),
        *("--train.seed", str(config.seed)),
        *("--ckpt.output_dir", str(paths.adapter), "--ckpt.path", str(paths.checkpoints)),
    ]
    if cli == DPO:
        args += ["--model.beta", num(resolved(config.beta, "beta"))]
    return args


def check_steps(cli: str, parsed: dict[str, Any], rows: int) -> int:
    """Refuse a batch arithmetic that plans 0 steps; returns the planned steps."""
    get = Effective(parsed, cli)
    rows = min(rows, get.int("data.max_samples"))
    batch, micro = get.int("train.batch_size"), get.int("train.micro_batch_size")
    if rows <= 0:
        raise FlagError(f"the dataset has no {cli.removeprefix('train_')} rows")
    if batch % micro:
        raise FlagError(f"--train.batch_size {batch} is not a multiple of micro batch {micro}")
    if rows < batch:
        raise FlagError(f"{rows} rows < --train.batch_size {batch}: 0 steps")
    if cli == DPO and float(get("model.beta")) <= 0:
        raise FlagError("DPO needs --model.beta > 0 (at 0 its loss has no gradient)")
    steps = planned_steps(cli, rows, batch, micro, get.int("train.max_epochs"))
    if steps <= 0:
        raise FlagError("this argv plans 0 optimiser steps")
    return steps


def build_argv(
    cli: str, model: str, config: TrainConfig, rows: int, paths: DeepSpeedPaths
) -> tuple[list[str], int]:
    """(``deepspeed ... --module openrlhf.cli.<cli>`` argv, planned steps), checked."""
    args = merge(base_args(cli, model, config, rows, paths), config.backend_args)
    steps = check_steps(cli, parse_args(args, cli), rows)
    return ["deepspeed", "--num_gpus", "1", "--module", f"openrlhf.cli.{cli}", *args], steps
