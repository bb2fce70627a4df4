"""The agent's accumulated held-out set: every held-out prompt its releases wrote so far.

A first release holds out only a few task keys (10% of a few dozen), too few for the gate's
minimum. The services therefore evaluate each run on every held-out key the agent has,
read from the ``heldout.jsonl`` of each of its releases: one row per task key (its first
release's), only keys Postgres still holds out for the agent, capped by a deterministic
bottom-k sample on sha256(task key), so the set only grows from run to run and the same
keys are compared on every machine. Each row is tagged with its release, so the report can
say how many prompts came from which release.
"""

from __future__ import annotations

import hashlib
from collections.abc import Collection, Iterable
from pathlib import Path
from typing import Any

import orjson

from rlstream import limits
from rlstream.errors import ConfigError, InputError

#: the most prompts the services evaluate a run on by default (RLSTREAM_EVAL_HELDOUT_CAP)
DEFAULT_CAP = 500


def _rank(task_key: str) -> bytes:
    return hashlib.sha256(task_key.encode()).digest()


def accumulate(
    sources: Iterable[tuple[str, Path]],
    keep: Collection[str] | None = None,
    cap: int | None = DEFAULT_CAP,
) -> list[dict[str, Any]]:
    """Held-out rows from ``(release id, heldout.jsonl)`` in release order: the first row
    of each task key, only keys in ``keep`` (when given), at most ``cap`` of them."""
    rows: dict[str, dict[str, Any]] = {}
    for release, path in sources:
        if not path.is_file():
            continue
        with path.open("rb") as fh:
            for n, line in enumerate(fh, start=1):
                if not line.strip():
                    continue
                try:
                    row = limits.loads(line)
                except InputError as exc:
                    raise ConfigError(f"{path}:{n}: {exc}") from exc
                key = row.get("task_key") if isinstance(row, dict) else None
                if not isinstance(key, str) or key in rows:
                    continue
                if keep is not None and key not in keep:
                    continue
                rows[key] = {**row, "release": release}
    keys = sorted(rows, key=_rank)
    return [rows[k] for k in (keys if cap is None else keys[:cap])]


def write_rows(rows: Iterable[dict[str, Any]], path: Path) -> Path:
    """``rows`` as a heldout.jsonl the evaluation reads."""
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(b"".join(orjson.dumps(r) + b"\n" for r in rows))
    return path
