"""Reading a curated dataset folder for training: which method, which file, which rows."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import orjson

from rlstream.curation import Manifest, verify_dataset
from rlstream.errors import ConfigError
from rlstream.training.config import MethodChoice, TrainConfig, TrainMethod, method_of

METHOD_FILES: dict[TrainMethod, str] = {
    "sft": "sft.jsonl",
    "dpo": "dpo.jsonl",
    "grpo": "grpo.jsonl",
    # GSPO and PPO sample prompts and grade the samples, as GRPO does: the same rows
    "gspo": "grpo.jsonl",
    "ppo": "grpo.jsonl",
}


def load_manifest(dataset_dir: Path) -> Manifest:
    """The verified manifest (every file re-hashed); a clear error when it is not a dataset."""
    if not (dataset_dir / "manifest.json").is_file():
        raise ConfigError(f"{dataset_dir} is not a dataset folder (no manifest.json)")
    return verify_dataset(dataset_dir)


def resolve_method(manifest: Manifest, requested: MethodChoice) -> TrainMethod:
    """``auto`` follows the manifest's recommendation; the chosen file must have rows."""
    if requested == "auto":
        if manifest.method == "none":
            raise ConfigError(
                f"the dataset recommends no training method ({manifest.method_reason}); "
                "pass --method sft|dpo|grpo|gspo|ppo to train anyway"
            )
        method: TrainMethod = manifest.method
    else:
        method = requested
    file = METHOD_FILES[method]
    entry = manifest.files.get(file)
    if entry is None or entry.rows == 0:
        have = {m: e.rows for m, f in METHOD_FILES.items() if (e := manifest.files.get(f))}
        raise ConfigError(f"the dataset has no {method} rows ({file}); rows per method: {have}")
    return method


def resolve_config(dataset_dir: Path, config: TrainConfig) -> tuple[Manifest, TrainConfig]:
    """The verified manifest and ``config`` with its method resolved: what the trainer, the
    CLI and the launcher (before it records or launches anything) all call."""
    manifest = load_manifest(dataset_dir)
    method = resolve_method(manifest, config.method)
    return manifest, config.model_copy(update={"method": method})


#: tokens per row: conversation rows (short prompts), turn rows (agent prompts: a system
#: policy of ~1,300 tokens on tau-bench, so system + trained turn + recent context fit)
DEFAULT_MAX_LENGTH = {"conversation": 256, "turn": 2048}


def default_max_length(dataset_dir: Path) -> int:
    """The row length a dataset needs by default (its manifest's granularity)."""
    return DEFAULT_MAX_LENGTH[load_manifest(dataset_dir).granularity]


def method_rows(manifest: Manifest, config: TrainConfig) -> int:
    """Rows of the file of the config's (resolved) method, from the manifest."""
    entry = manifest.files.get(METHOD_FILES[method_of(config)])
    return 0 if entry is None else entry.rows


def read_rows(dataset_dir: Path, method: TrainMethod) -> list[dict[str, Any]]:
    """The rows of the method's JSONL file, in file order."""
    rows: list[dict[str, Any]] = []
    with (dataset_dir / METHOD_FILES[method]).open("rb") as fh:
        for line in fh:
            if line.strip():
                rows.append(orjson.loads(line))
    return rows
