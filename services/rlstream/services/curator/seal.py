"""Seal a dataset from the pending pool with the same code as ``rlstream curate``.

Written to a temporary folder, then renamed to ``<root>/<agent>/<dataset_id>``: a crash
mid-write leaves only a ``.tmp-*`` folder, never a half dataset under a real id, and
sealing the same rollouts twice yields the same id and the same folder.
"""

from __future__ import annotations

import logging
import shutil
import uuid
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from rlstream.curation import CurateOptions, curate, write_dataset
from rlstream.curation.heldout import HeldoutRule
from rlstream.pii.fields import safe_id
from rlstream.rollout import ScoredRollout

log = logging.getLogger("rlstream.services.curator")


@dataclass(frozen=True)
class Sealed:
    dataset_id: str
    sha256: str
    path: Path
    files: dict[str, str]
    manifest: dict[str, Any]
    rollout_ids: tuple[str, ...]
    method: str | None


def _safe(name: str) -> str:
    """A folder name for an agent: its PII-free id (ingest hashed it already; this also
    covers a transcript published straight onto the topic), file-system safe."""
    name = safe_id(name) or ""
    return "".join(c if c.isalnum() or c in "-_." else "_" for c in name) or "default"


def seal_dataset(
    pending: list[ScoredRollout],
    root: Path,
    agent: str,
    options: CurateOptions | None = None,
    heldout: HeldoutRule | None = None,
) -> Sealed | None:
    """Curate and write; None when curation keeps nothing, rejects the set, or leaves no
    method to train with (manifest method ``none``: released, the trainer would only exit 2).

    ``heldout`` (the keys Postgres holds out) keeps those task keys out of every training
    file; their prompts go to the release's heldout.jsonl.
    """
    if not pending:
        return None
    result = curate(pending, options or CurateOptions(), heldout=heldout)
    if result.rejected:
        return None
    ids = {r.rollout_id for g in result.kept for r in g.rollouts}
    ids |= {r.rollout_id for r in result.sft_pool}
    if not ids:
        return None
    base = root / _safe(agent)
    base.mkdir(parents=True, exist_ok=True)
    tmp = base / f".tmp-{uuid.uuid4().hex}"
    manifest = write_dataset(result, tmp)
    if manifest.method == "none":
        shutil.rmtree(tmp, ignore_errors=True)
        rows = {name: f.rows for name, f in sorted(manifest.files.items())}
        log.info(
            "not released: no training method fits (%s); rows per file: %s",
            manifest.method_reason,
            rows,
            extra={"agent": agent},
        )
        return None
    m = manifest.model_dump(mode="json")
    dataset_id = str(m.get("dataset_id") or m["sha256"])
    final = base / dataset_id
    if final.exists():
        shutil.rmtree(tmp, ignore_errors=True)
    else:
        tmp.rename(final)
    files = m.get("files") or {}
    file_hashes = (
        {str(f.get("name") or f.get("path")): str(f.get("sha256")) for f in files}
        if isinstance(files, list)
        else {str(k): str(v.get("sha256") if isinstance(v, dict) else v) for k, v in files.items()}
    )
    # the event carries a summary; per-row lineage is in manifest.json and in Postgres
    summary = {k: v for k, v in m.items() if k not in ("lineage", "conflicting_rewards")}
    summary["lineage_rows"] = len(m.get("lineage") or ())
    return Sealed(
        dataset_id=dataset_id,
        sha256=str(m.get("sha256") or dataset_id),
        path=final,
        files=file_hashes,
        manifest=summary,
        rollout_ids=tuple(sorted(ids)),
        method=str(manifest.method),
    )
