"""One retention pass: the store selects, :mod:`rlstream.retention.files` removes files.

Every step is idempotent (a second pass over the same state removes nothing), so a pass
interrupted half way, or run by two curators at once, leaves nothing inconsistent: rows
are deleted in short transactions, and a release or run folder already gone is skipped.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable, Sequence
from datetime import timedelta
from pathlib import Path
from typing import Protocol

from rlstream.retention.files import Outcome, prune_release, remove_run_folder
from rlstream.retention.policy import Kind, RetentionPolicy, RetentionReport

log = logging.getLogger("rlstream.retention")


class RetentionStore(Protocol):
    """What a pass needs of :class:`rlstream.storage.Store`."""

    async def count_closed_buffers(self, older_than: timedelta) -> int: ...
    async def purge_closed_buffers(self, older_than: timedelta) -> int: ...
    async def count_pending_rollouts(self, older_than: timedelta) -> int: ...
    async def purge_pending_rollouts(self, older_than: timedelta) -> int: ...
    async def prunable_datasets(
        self, keep_newest: int, older_than: timedelta
    ) -> list[tuple[str, str]]: ...
    async def expired_run_artifacts(self, older_than: timedelta) -> list[tuple[str, str]]: ...
    async def kept_model_paths(self) -> list[str]: ...


class _Tally:
    def __init__(self) -> None:
        self.removed = 0
        self.bytes = 0
        self.skipped = 0

    def add(self, what: str, outcome: tuple[Outcome, int]) -> None:
        kind, size = outcome
        if kind == "removed":
            self.removed += 1
            self.bytes += size
        elif kind == "skipped":
            self.skipped += 1
        log.debug("retention %s: %s", what, kind)


async def _files(
    items: Sequence[tuple[str, str]],
    kind: Kind,
    remove: Callable[[Path], tuple[Outcome, int]],
    tally: _Tally,
) -> None:
    for ident, path in items:
        try:
            outcome = await asyncio.to_thread(remove, Path(path))
        except OSError as exc:
            log.warning("retention: %s %s at %s not removed: %s", kind, ident, path, exc)
            tally.skipped += 1
            continue
        tally.add(f"{kind} {ident}", outcome)


async def apply_retention(
    store: RetentionStore,
    policy: RetentionPolicy,
    *,
    dataset_roots: Sequence[Path],
    run_roots: Sequence[Path],
    dry_run: bool = False,
) -> RetentionReport:
    """Apply ``policy`` once; per kind, what was removed (``dry_run``: only counted).
    Files are touched only below ``dataset_roots`` / ``run_roots``."""
    removed: dict[Kind, int] = {}
    sizes: dict[Kind, int] = {}
    skipped: dict[Kind, int] = {}
    if policy.turn_buffers is not None:
        age = policy.turn_buffers
        count = store.count_closed_buffers if dry_run else store.purge_closed_buffers
        removed["turn_buffers"] = await count(age)
    if policy.pending_rollouts is not None:
        age = policy.pending_rollouts
        count = store.count_pending_rollouts if dry_run else store.purge_pending_rollouts
        removed["pending_rollouts"] = await count(age)
    if policy.datasets is not None and policy.datasets_keep is not None:
        releases = await store.prunable_datasets(policy.datasets_keep, policy.datasets)
        tally = _Tally()

        def prune(p: Path) -> tuple[Outcome, int]:
            return prune_release(p, dataset_roots, dry_run=dry_run)

        await _files(releases, "datasets", prune, tally)
        removed["datasets"], sizes["datasets"] = tally.removed, tally.bytes
        skipped["datasets"] = tally.skipped
    if policy.run_artifacts is not None:
        runs = await store.expired_run_artifacts(policy.run_artifacts)
        kept = [Path(p) for p in await store.kept_model_paths()] if runs else []
        tally = _Tally()

        def remove(p: Path) -> tuple[Outcome, int]:
            return remove_run_folder(p, run_roots, kept, dry_run=dry_run)

        await _files(runs, "run_artifacts", remove, tally)
        removed["run_artifacts"], sizes["run_artifacts"] = tally.removed, tally.bytes
        skipped["run_artifacts"] = tally.skipped
    return RetentionReport(dry_run=dry_run, removed=removed, bytes=sizes, skipped=skipped)
