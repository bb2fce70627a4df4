"""Stable ids: a model is named by its weights, promotions and evaluations by their cause.

Deterministic ids are what make retries safe: an evaluator that re-reads a training event
computes the same evaluation id and finds the stored decision; a promotion retried after a
crash finds its own row.
"""

from __future__ import annotations

import hashlib
from pathlib import Path

from rlstream.registry.errors import RegistryError

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


def evaluation_id_for(run_id: str) -> str:
    """One evaluation per training run: redelivered run events find this id."""
    return f"eval-{run_id}"


def short(digest: str, n: int = 12) -> str:
    return digest[:n]


def derived_id(prefix: str, *parts: str | None) -> str:
    """``prefix-<sha256 of parts>[:24]``: the same inputs name the same promotion."""
    h = hashlib.sha256("\0".join(p or "" for p in parts).encode()).hexdigest()
    return f"{prefix}-{h[:24]}"
