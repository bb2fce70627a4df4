"""Reading a curated dataset folder for training: which method, which file, which rows."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import orjson

from rlstream.curation import Manifest, verify_dataset
from rlstream.curation.writer import UNKNOWN_POLICY, count_policies
from rlstream.errors import ConfigError
from rlstream.training.config import MethodChoice, TrainConfig, TrainMethod, method_of, restricts

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
    cfg = config.model_copy(update={"method": method})
    check_on_policy(dataset_dir, manifest, cfg)
    return manifest, cfg


def _policy_counts(dataset_dir: Path, manifest: Manifest, method: TrainMethod) -> dict[str, int]:
    """Rows per policy of the method's file: the manifest's, else counted from the rows
    (datasets curated before the manifest recorded them)."""
    file = METHOD_FILES[method]
    if file in manifest.policy_rows:
        return manifest.policy_rows[file]
    return count_policies(read_rows(dataset_dir, method))


def check_on_policy(dataset_dir: Path, manifest: Manifest, config: TrainConfig) -> int | None:
    """On-policy rows of the config's method (None: not restricted); zero refuses the run
    before anything starts, saying which policies the rows came from."""
    method = method_of(config)
    policy = restricts(config, method)
    if policy is None:
        return None
    counts = _policy_counts(dataset_dir, manifest, method)
    n = counts.get(policy, 0)
    if n == 0:
        have = ", ".join(f"{k}: {v}" for k, v in counts.items()) or "no rows"
        raise ConfigError(
            f"on-policy {method}: none of the {sum(counts.values())} {METHOD_FILES[method]} "
            f"rows were produced by {policy} (rows per policy: {have}; {UNKNOWN_POLICY} = the "
            "logs named no model); serve that model and curate its conversations, or drop "
            "--on-policy"
        )
    return n


#: tokens per row: conversation rows (short prompts), turn rows (agent prompts: a system
#: policy of ~1,300 tokens on tau-bench, so system + trained turn + recent context fit)
DEFAULT_MAX_LENGTH = {"conversation": 256, "turn": 2048}


def default_max_length(dataset_dir: Path) -> int:
    """The row length a dataset needs by default (its manifest's granularity)."""
    return DEFAULT_MAX_LENGTH[load_manifest(dataset_dir).granularity]


def method_rows(manifest: Manifest, config: TrainConfig) -> int:
    """Rows of the file of the config's (resolved) method, from the manifest; on-policy:
    the rows of that policy."""
    method = method_of(config)
    file = METHOD_FILES[method]
    policy = restricts(config, method)
    if policy is not None and file in manifest.policy_rows:
        return manifest.policy_rows[file].get(policy, 0)
    entry = manifest.files.get(file)
    return 0 if entry is None else entry.rows


def train_rows(dataset_dir: Path, config: TrainConfig) -> list[dict[str, Any]]:
    """The rows a run of ``config`` (method resolved) trains on: the method's file, only
    the on-policy rows when ``config.on_policy`` restricts the method."""
    method = method_of(config)
    rows = read_rows(dataset_dir, method)
    policy = restricts(config, method)
    return rows if policy is None else [r for r in rows if r.get("policy") == policy]


def read_rows(dataset_dir: Path, method: TrainMethod) -> list[dict[str, Any]]:
    """The rows of the method's JSONL file, in file order."""
    rows: list[dict[str, Any]] = []
    with (dataset_dir / METHOD_FILES[method]).open("rb") as fh:
        for line in fh:
            if line.strip():
                rows.append(orjson.loads(line))
    return rows
