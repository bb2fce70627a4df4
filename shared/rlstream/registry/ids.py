"""Stable ids: a model is named by its weights, promotions and evaluations by their cause.

Deterministic ids are what make retries safe: an evaluator that re-reads a training event
computes the same evaluation id and finds the stored decision; a promotion retried after a
crash finds its own row.
"""

from __future__ import annotations

import hashlib
from pathlib import Path

from pydantic import JsonValue

from rlstream.registry.errors import RegistryError
from rlstream.storage.records import ModelRecord

#: files that describe a run, not the weights (they may carry timestamps)
_IGNORED = {"README.md", "metrics.json", "run.json", "training_args.bin"}


def weights_digest(weights_dir: Path) -> str:
    """sha256 over every weight/config file's relative path and sha256, in sorted order.

    Works for a peft adapter folder (adapter_model.safetensors + adapter_config.json) and
    for a full transformers folder alike; the same bytes always give the same digest.
    """
    root = Path(weights_dir)
    if not root.is_dir():
        raise RegistryError(f"weights folder not found: {root}")
    files = sorted(
        p
        for p in root.rglob("*")
        if p.is_file() and p.name not in _IGNORED and not p.name.startswith(".")
    )
    if not files:
        raise RegistryError(f"no weight files in {root}")
    outer = hashlib.sha256()
    for p in files:
        inner = hashlib.sha256()
        with p.open("rb") as fh:
            for chunk in iter(lambda: fh.read(1 << 20), b""):
                inner.update(chunk)
        outer.update(f"{p.relative_to(root).as_posix()}\0{inner.hexdigest()}\n".encode())
    return outer.hexdigest()


def model_id_for(weights_dir: Path) -> str:
    """The registry id of the weights in ``weights_dir``: their digest (64 hex)."""
    return weights_digest(weights_dir)


def model_record(
    weights_dir: Path,
    *,
    agent: str,
    run_id: str | None = None,
    dataset_sha256: str | None = None,
    evaluation_id: str | None = None,
    base_model: str | None = None,
    tags: dict[str, JsonValue] | None = None,
    model_id: str | None = None,
) -> ModelRecord:
    """The registry row for the weights in ``weights_dir`` (named by their digest)."""
    mid = model_id or model_id_for(weights_dir)
    meta: dict[str, JsonValue] = {
        "weights_sha256": mid,
        "run_id": run_id,
        "dataset_sha256": dataset_sha256,
        "evaluation_id": evaluation_id,
        "base_model": base_model,
    }
    meta.update(tags or {})
    return ModelRecord(
        model_id=mid,
        agent=agent,
        run_id=run_id,
        path=str(Path(weights_dir).resolve()),
        metadata={k: v for k, v in meta.items() if v is not None},
    )


def evaluation_id_for(run_id: str) -> str:
    """The evaluation id: one evaluation per training run, so redelivered run events find
    it (the evaluations row, the EvaluationEvent's ``event_id``, promotion ids). A report
    file's own content id is ``report_id`` (``report-...``, rlstream.evaluation.run)."""
    return f"eval-{run_id}"


def short(digest: str, n: int = 12) -> str:
    return digest[:n]


def derived_id(prefix: str, *parts: str | None) -> str:
    """``prefix-<sha256 of parts>[:24]``: the same inputs name the same promotion."""
    h = hashlib.sha256("\0".join(p or "" for p in parts).encode()).hexdigest()
    return f"{prefix}-{h[:24]}"
