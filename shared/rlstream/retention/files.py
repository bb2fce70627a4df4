"""Removing a pruned release's training files and an expired run's folder, safely.

Paths come from database rows, so none is trusted: a path is only touched when it lies
strictly inside one of the configured roots (the dataset folder, the runs folder) after
symbolic links are resolved, is not itself a link, and (run folders) holds no weights of a
kept model. A pruned release keeps ``manifest.json`` (the lineage of every row),
``heldout.jsonl`` (the evaluator's accumulated held-out set reads every release's) and
``next_steps.md``; only the training files go, and ``pruned.json`` says so.
"""

from __future__ import annotations

import json
import logging
import os
import shutil
from collections.abc import Sequence
from datetime import UTC, datetime
from pathlib import Path
from typing import Literal

log = logging.getLogger("rlstream.retention")

#: the files a release's training reads (rlstream.curation.writer.DATA_FILES minus the rest)
TRAINING_FILES = ("grpo.jsonl", "dpo.jsonl", "sft.jsonl")
#: written into a pruned release: what went, when and why
PRUNED_MARKER = "pruned.json"

#: what happened to one path: removed, left in place (and logged), or nothing to do
Outcome = Literal["removed", "skipped", "absent"]


def inside(path: Path, roots: Sequence[Path]) -> bool:
    """True when ``path`` (links resolved) is strictly below one of ``roots``."""
    real = path.resolve()
    for root in roots:
        top = root.resolve()
        if real != top and real.is_relative_to(top):
            return True
    return False


def _size(path: Path) -> int:
    """Bytes of the regular files under ``path`` (links not followed)."""
    total = 0
    for dirpath, _dirs, files in os.walk(path):
        for name in files:
            st = os.lstat(os.path.join(dirpath, name))
            total += st.st_size
    return total


def _refuse(path: Path, roots: Sequence[Path], what: str) -> bool:
    if path.is_symlink():
        log.warning("retention: %s %s is a symbolic link; left in place", what, path)
        return True
    if not inside(path, roots):
        log.warning(
            "retention: %s %s is outside %s; left in place",
            what,
            path,
            ", ".join(str(r) for r in roots),
        )
        return True
    return False


def prune_release(path: Path, roots: Sequence[Path], *, dry_run: bool) -> tuple[Outcome, int]:
    """Remove a release's training files; (outcome, bytes). A release already pruned, or
    whose folder is not on this machine, is ``absent``."""
    if not path.is_dir():
        return "absent", 0
    if _refuse(path, roots, "dataset"):
        return "skipped", 0
    files = [path / n for n in TRAINING_FILES if (path / n).is_file()]
    files = [f for f in files if not f.is_symlink()]
    if not files:
        return "absent", 0
    size = sum(f.stat().st_size for f in files)
    if dry_run:
        return "removed", size
    marker = {
        "pruned_by": "rlstream retention",
        "at": datetime.now(UTC).isoformat(timespec="seconds"),
        "removed": sorted(f.name for f in files),
        "kept": "manifest.json (lineage), heldout.jsonl (the accumulated held-out set)",
    }
    (path / PRUNED_MARKER).write_text(json.dumps(marker, indent=2) + "\n")
    for f in files:
        f.unlink(missing_ok=True)
    return "removed", size


def _holds(folder: Path, kept: Sequence[Path]) -> bool:
    real = folder.resolve()
    for p in kept:
        other = p.resolve()
        if other == real or other.is_relative_to(real) or real.is_relative_to(other):
            return True
    return False


def remove_run_folder(
    path: Path, roots: Sequence[Path], kept: Sequence[Path], *, dry_run: bool
) -> tuple[Outcome, int]:
    """Remove an expired run's folder; (outcome, bytes). Never one that holds (or lies
    inside) the weights of a kept model."""
    if not path.exists() and not path.is_symlink():
        return "absent", 0
    if _refuse(path, roots, "run folder"):
        return "skipped", 0
    if not path.is_dir():
        log.warning("retention: run folder %s is not a folder; left in place", path)
        return "skipped", 0
    if _holds(path, kept):
        log.warning("retention: run folder %s holds a kept model's weights; left in place", path)
        return "skipped", 0
    size = _size(path)
    if not dry_run:
        shutil.rmtree(path)
    return "removed", size
