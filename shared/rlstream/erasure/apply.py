"""One erasure: find, delete in Postgres (batches, one transaction each), then Redis, files,
topics, champions, and the record.

Order matters: rows first (the system of record; the triggers of migration 0006 then refuse
the conversation for good), then what is derived from them. A step that cannot be done here
(a release folder not on this machine, Redis down, Kafka unreachable) leaves a ``pending``
entry and the record's status ``partial``; ``resume`` finishes file work from the digests
the record keeps. Each batch takes the curator's release lock of the (agent, reward spec)
pairs it touches, so a release being sealed from the same rollouts finishes first (and is
then rewritten) or starts after (and never sees them).
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import secrets
import time
from collections.abc import AsyncIterator, Awaitable, Callable, Iterator, Sequence
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from rlstream.erasure import files as erase_files
from rlstream.erasure.kv import erase_redis
from rlstream.erasure.plan import (
    ChampionChange,
    DatasetChange,
    ErasurePlan,
    ErasureReport,
    RunChange,
    plan_effects,
)
from rlstream.erasure.selector import Selector, match_fields
from rlstream.erasure.settings import ErasureSettings
from rlstream.erasure.topics import TopicOutcome, erase_topics
from rlstream.events.topic_table import TopicSettings
from rlstream.storage import (
    ErasedRollout,
    ErasureImpact,
    ErasureOps,
    ErasureRecord,
    RedisState,
    erased_digest,
    release_lock_name,
)

log = logging.getLogger("rlstream.erasure")

#: (agent, reason) -> the champion after one rollback step, None when there is none earlier
Rollback = Callable[[str, str], Awaitable[str | None]]
#: model id -> the champion it replaced (None: none), from the promotion history
PreviousOf = Callable[[str, str], Awaitable[str | None]]

_LOCK_TTL_MS = 60_000


def new_erasure_id() -> str:
    return f"erasure-{datetime.now(UTC):%Y%m%dT%H%M%S}-{secrets.token_hex(4)}"


def _query(selector: Selector, subject_fields: tuple[str, ...]) -> dict[str, Any]:
    forms = selector.forms()
    docs: list[dict[str, Any]] = []
    if selector.kind in ("user_key", "user_value"):
        docs = [{f: v} for f in match_fields(subject_fields, selector) for v in forms]
    return {
        "forms": forms,
        "docs": docs,
        "by_id": selector.kind in ("conversation", "user_value"),
        "by_agent": selector.kind == "agent",
    }


@contextlib.asynccontextmanager
async def _release_locks(
    redis: RedisState | None, rollouts: Sequence[ErasedRollout]
) -> AsyncIterator[None]:
    """The curator's release locks of these rollouts' (agent, spec) pairs, in a fixed order."""
    held = []
    try:
        if redis is not None:
            for agent, spec in sorted({(r.agent, r.reward_spec) for r in rollouts}):
                name = release_lock_name(agent, spec)
                lock = await redis.locks.try_acquire(name, _LOCK_TTL_MS, wait_s=_LOCK_TTL_MS / 1000)
                if lock is not None:
                    held.append(lock)
        yield
    finally:
        for lock in held:
            await lock.release()


class Eraser:
    """Everything one erasure needs; :meth:`run` does it (or, ``dry_run``, counts it)."""

    def __init__(
        self,
        ops: ErasureOps,
        settings: ErasureSettings,
        *,
        dataset_roots: Sequence[Path],
        run_roots: Sequence[Path],
        redis: RedisState | None = None,
        topics: TopicSettings | None = None,
        rollback: Rollback | None = None,
        previous_of: PreviousOf | None = None,
    ) -> None:
        self.ops = ops
        self.settings = settings
        self.dataset_roots = list(dataset_roots)
        self.run_roots = list(run_roots)
        self.redis = redis
        self.topics = topics
        self.rollback = rollback
        self.previous_of = previous_of
        self._steps: dict[str, float] = {}

    def _policy(self) -> dict[str, Any]:
        s = self.settings
        return {"datasets": s.erasure_datasets, "champion": s.erasure_champion}

    @contextlib.contextmanager
    def _step(self, name: str) -> Iterator[None]:
        """Time one step (the report's ``steps``: where the seconds went)."""
        t0 = time.perf_counter()
        try:
            yield
        finally:
            self._steps[name] = self._steps.get(name, 0.0) + time.perf_counter() - t0

    async def run(self, selector: Selector, *, dry_run: bool = False) -> ErasureReport:
        t0 = time.perf_counter()
        self._steps = {}
        q = _query(selector, self.settings.subject_fields)
        counts: dict[str, int] = {}
        pending: list[dict[str, str]] = []
        eid = None if dry_run else new_erasure_id()
        rollouts: list[ErasedRollout] = []
        cids: list[str] = []
        if dry_run:
            with self._step("postgres"):
                t = await self.ops.match_erasure(**q)
                cids = list(t.conversation_ids)
                rollouts = await self.ops.erasure_rollouts(cids)
                buffers = set(t.buffer_ids) | await self.ops.buffers_among(cids)
            counts = {
                "transcripts": len(cids),
                "rollouts": len(rollouts),
                "released_rollouts": sum(1 for r in rollouts if r.released_in),
                "turn_buffers": len(buffers),
            }
            if self.redis is not None:
                with self._step("redis"):
                    rc = await erase_redis(self.redis, cids, rollouts, dry_run=True)
                counts["redis_keys"] = rc["idempotency_keys"] + rc["neardup_entries"]
                counts["redis_uncounted"] = rc["counted_rollouts"]
        else:
            assert eid is not None
            await self.ops.begin_erasure(
                ErasureRecord(
                    erasure_id=eid, selector=selector.kind, field=selector.field,
                    policy=self._policy(),
                )
            )  # fmt: skip
            await self._erase_batches(eid, q, counts, rollouts, cids, pending)
        with self._step("lineage"):
            plan = await self._plan(rollouts)
        digests = {erased_digest("rollout", r.rollout_id) for r in rollouts}
        digests |= {erased_digest("conversation", c) for c in cids}
        with self._step("files"):
            plan = await self.apply_files(plan, eid or "dry-run", digests, counts, pending, dry_run)
        with self._step("champions"):
            plan = await self._champions(plan, eid or "dry-run", dry_run)
        with self._step("topics"):
            topics = await self._topics(cids, rollouts, selector, pending, dry_run)
        if topics is not None:
            counts["tombstones"] = sum(topics.tombstoned.values())
        status = "partial" if pending else "done"
        report = ErasureReport(
            erasure_id=eid, dry_run=dry_run, selector=selector.describe(), status=status,
            counts=counts, plan=plan, topics=topics, pending=tuple(pending),
            seconds=time.perf_counter() - t0, steps=dict(self._steps),
        )  # fmt: skip
        if eid is not None:
            await self._finish(eid, selector, report)
        return report

    async def _erase_batches(
        self,
        eid: str,
        q: dict[str, Any],
        counts: dict[str, int],
        rollouts: list[ErasedRollout],
        cids: list[str],
        pending: list[dict[str, str]],
    ) -> None:
        while True:
            with self._step("postgres"):
                t = await self.ops.match_erasure(**q, limit=self.settings.erasure_batch)
                if not t.conversation_ids and not t.buffer_ids:
                    return
                before = await self.ops.erasure_rollouts(t.conversation_ids)
            waited = time.perf_counter()
            async with _release_locks(self.redis, before):
                self._steps["release locks"] = (
                    self._steps.get("release locks", 0.0) + time.perf_counter() - waited
                )
                with self._step("postgres"):
                    rows = await self.ops.erase_rows(eid, t.conversation_ids, t.buffer_ids)
            for k in ("transcripts", "rollouts", "released_rollouts", "turn_buffers",
                      "lineage_edges", "heldout_keys_removed"):  # fmt: skip
                counts[k] = counts.get(k, 0) + int(getattr(rows, k))
            counts["groups_removed"] = counts.get("groups_removed", 0) + len(rows.groups_removed)
            rollouts += rows.erased
            cids += rows.conversation_ids
            if self.redis is not None:
                try:
                    with self._step("redis"):
                        rc = await erase_redis(
                            self.redis, rows.conversation_ids, rows.erased, rows.groups_removed
                        )
                except Exception as exc:  # Redis down: its keys expire; a rebuild fixes counts
                    pending.append({"kind": "redis", "why": f"{type(exc).__name__}: {exc}"[:300]})
                else:
                    counts["redis_keys"] = (
                        counts.get("redis_keys", 0) + rc["idempotency_keys"]
                        + rc["neardup_entries"] + rc["groups_removed"]
                    )  # fmt: skip
                    counts["redis_uncounted"] = (
                        counts.get("redis_uncounted", 0) + rc["counted_rollouts"]
                    )
            if rows.transcripts == 0 and rows.turn_buffers == 0:
                return  # nothing could be deleted: do not loop on the same rows

    async def _plan(self, rollouts: Sequence[ErasedRollout]) -> ErasurePlan:
        datasets = sorted({r.released_in for r in rollouts if r.released_in})
        runs, models = await self.ops.built_from(datasets)
        return plan_effects(
            rollouts,
            await self.ops.dataset_locations(datasets),
            await self.ops.run_locations(runs),
            models,
            await self.ops.aliases_of(models),
            datasets=self.settings.erasure_datasets,
            champion=self.settings.erasure_champion,
        )

    async def apply_files(
        self,
        plan: ErasurePlan,
        eid: str,
        digests: set[str],
        counts: dict[str, int],
        pending: list[dict[str, str]],
        dry_run: bool,
    ) -> ErasurePlan:
        check = erase_files.digest_check(digests)
        changes: list[DatasetChange] = []
        for d in plan.datasets:
            outcome, removed, manifest = await asyncio.to_thread(
                erase_files.erase_release, Path(d.path), self.dataset_roots, check, eid,
                revoke=d.action == "revoke", dry_run=dry_run,
            )  # fmt: skip
            revision = manifest.revision if manifest is not None else None
            changes.append(
                d.model_copy(
                    update={"outcome": outcome, "rows_removed": removed, "revision": revision}
                )
            )
            counts["dataset_rows"] = counts.get("dataset_rows", 0) + sum(removed.values())
            if outcome in ("absent", "skipped"):
                why = (
                    "folder not on this machine"
                    if outcome == "absent"
                    else "outside the dataset folder or a link"
                )
                pending.append({"kind": "dataset", "id": d.dataset_id, "why": why})
            elif manifest is not None and not dry_run:
                stored = await self.ops.dataset_manifest(d.dataset_id) or {}
                await self.ops.revise_dataset(
                    d.dataset_id, manifest.revision, erase_files.revised_record(stored, manifest),
                    manifest.revoked_by,
                )  # fmt: skip
        runs: list[RunChange] = []
        for r in plan.runs:
            if not r.scrub or r.path is None:
                runs.append(r)
                if r.path is not None:
                    pending.append({"kind": "run", "id": r.run_id, "why": f"run {r.status}"})
                continue
            outcome, n = await asyncio.to_thread(
                erase_files.scrub_run, Path(r.path), self.run_roots, dry_run=dry_run
            )
            runs.append(r.model_copy(update={"files_removed": n}))
            counts["run_files"] = counts.get("run_files", 0) + n
            if outcome == "skipped":
                pending.append({"kind": "run", "id": r.run_id, "why": "outside the runs folder"})
        return plan.model_copy(update={"datasets": tuple(changes), "runs": tuple(runs)})

    async def _champions(self, plan: ErasurePlan, eid: str, dry_run: bool) -> ErasurePlan:
        affected = set(plan.models)
        out: list[ChampionChange] = []
        for ch in plan.champions:
            target = await self._untouched(ch.agent, ch.model_id, affected)
            if ch.policy == "keep" or self.rollback is None:
                outcome = "kept (trained on erased data: flagged)"
            elif target is None:
                outcome = "kept: no earlier champion was trained without the erased data"
            elif dry_run:
                outcome = f"would roll back to {target[:12]}"
            else:
                current: str | None = ch.model_id
                for _ in range(32):
                    if current == target or current is None:
                        break
                    current = await self.rollback(ch.agent, f"erasure {eid}")
                outcome = f"rolled back to {str(current)[:12]}"
            out.append(ch.model_copy(update={"outcome": outcome}))
        return plan.model_copy(update={"champions": tuple(out)})

    async def _untouched(self, agent: str, model: str, affected: set[str]) -> str | None:
        """The newest earlier champion not trained on the erased data, if any."""
        if self.previous_of is None:
            return None
        current: str | None = model
        for _ in range(32):
            current = await self.previous_of(agent, current) if current else None
            if current is None or current not in affected:
                return current
        return None

    async def _topics(
        self,
        cids: Sequence[str],
        rollouts: Sequence[ErasedRollout],
        selector: Selector,
        pending: list[dict[str, str]],
        dry_run: bool,
    ) -> TopicOutcome | None:
        if self.topics is None:
            return TopicOutcome(skipped="no Kafka configured (RLSTREAM_KAFKA_BOOTSTRAP)")
        keys = sorted(set(cids) | {r.rollout_id for r in rollouts})
        if selector.kind == "conversation":
            keys = sorted(set(keys) | set(selector.forms()))  # the raw topic's key as sent
        try:
            return await erase_topics(self.topics, keys, dry_run=dry_run)
        except Exception as exc:  # an unreachable cluster: the rows are erased regardless
            pending.append({"kind": "topics", "why": f"{type(exc).__name__}: {exc}"[:300]})
            return TopicOutcome(skipped=f"Kafka unreachable: {type(exc).__name__}")

    async def _finish(self, eid: str, selector: Selector, report: ErasureReport) -> None:
        p = report.plan
        affected: dict[str, Any] = {
            "datasets": [d.dataset_id for d in p.datasets],
            "runs": [r.run_id for r in p.runs],
            "models": list(p.models),
            "champions": [c.model_dump() for c in p.champions],
        }
        if report.topics is not None:
            affected["topics"] = report.topics.model_dump()
        impacts = [
            ErasureImpact(erasure_id=eid, kind="dataset", id=d.dataset_id,
                          detail={"outcome": d.outcome, "rows_removed": d.rows_removed,
                                  "revision": d.revision, "action": d.action})
            for d in p.datasets
        ] + [
            ErasureImpact(erasure_id=eid, kind="run", id=r.run_id,
                          detail={"files_removed": r.files_removed, "status": r.status})
            for r in p.runs
        ] + [
            ErasureImpact(erasure_id=eid, kind="model", id=m,
                          detail={"champion": next((c.outcome for c in p.champions
                                                    if c.model_id == m), None)})
            for m in p.models
        ]  # fmt: skip
        record = ErasureRecord(
            erasure_id=eid, selector=selector.kind, field=selector.field, status=report.status,
            counts=report.counts, affected=affected, policy=self._policy(),
            pending=tuple(report.pending),
        )  # fmt: skip
        await self.ops.finish_erasure(record, impacts)
        log.info("erasure %s %s: %s", eid, report.status, report.counts)
