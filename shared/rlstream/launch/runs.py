"""Runs table + ``rlstream.training.v1``: one place that records a run's state changes.

States only move forward (launched < started < failed | over_budget < succeeded), so a late
or repeated report (a redelivered launch, a watcher re-listing after a restart, the
trainer and the watcher both seeing the end) changes nothing and publishes nothing. The
event is published before the row advances: a crash in between publishes it again on
the next report, with the same ``event_id`` (``run_id:state``) for consumers to dedupe.
"""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Callable
from typing import Any

from rlstream.events.models import TrainingRunEvent, TrainingState
from rlstream.launch.base import RunSpec, RunUpdate
from rlstream.storage.records import RunRecord

log = logging.getLogger("rlstream.launch.runs")

Publish = Callable[[TrainingRunEvent], Awaitable[None]]
#: ``succeeded`` outranks ``failed``: a Job retries a failed attempt (exit 1, up to
#: backoffLimit) after the trainer recorded it, and a later attempt may still succeed.
RANK: dict[str, int] = {
    "launched": 0,
    "started": 1,
    "failed": 2,
    "over_budget": 2,
    "succeeded": 3,
}
_RANK_SQL = (
    "CASE status WHEN 'launched' THEN 0 WHEN 'started' THEN 1 "
    "WHEN 'failed' THEN 2 WHEN 'over_budget' THEN 2 WHEN 'succeeded' THEN 3 ELSE -1 END"
)


def event_for(
    spec: RunSpec, state: TrainingState, launcher: str, reason: str | None = None
) -> TrainingRunEvent:
    r = spec.request
    return TrainingRunEvent(
        run_id=spec.run_id,
        dataset_id=r.dataset_id,
        agent=r.agent,
        reward_spec=r.reward_spec,
        state=state,
        reason=reason,
        backend=spec.backend,
        method=spec.method,
        base_model=spec.base_model,
        artifact_dir=spec.output_dir,
        launcher=launcher,
    )


class RunTracker:
    """Records states in ``runs`` and publishes them; every method is idempotent."""

    def __init__(self, store: Any, publish: Publish, launcher: str) -> None:
        self.store = store
        self.publish = publish
        self.launcher = launcher

    async def status(self, run_id: str) -> str | None:
        value = await self.store.pool.fetchval("SELECT status FROM runs WHERE run_id = $1", run_id)
        return None if value is None else str(value)

    async def ensure_run(
        self, spec: RunSpec, state: TrainingState, extra: dict[str, Any] | None = None
    ) -> bool:
        """Insert the run row in ``state`` unless it exists; True when this call made it."""
        r = spec.request
        known = await self.store.pool.fetchval(
            "SELECT 1 FROM datasets WHERE dataset_id = $1", r.dataset_id
        )
        record = RunRecord(
            run_id=spec.run_id,
            agent=r.agent,
            backend=spec.backend,
            method=spec.method,
            status=state,
            dataset_id=r.dataset_id if known else None,
            argv_hash=spec.argv_hash(),
            spec={
                "run_spec": spec.model_dump(mode="json"),
                "launcher": self.launcher,
                **(extra or {}),
            },
            artifact_path=spec.output_dir,
        )
        return bool(await self.store.create_run(record))

    async def advance(
        self,
        spec: RunSpec,
        state: TrainingState,
        reason: str | None = None,
        metrics: dict[str, Any] | None = None,
    ) -> bool:
        """Move the run to ``state`` if that is forward; publish first. True if it moved."""
        current = await self.status(spec.run_id)
        if current is not None and RANK.get(current, -1) >= RANK[state]:
            return False
        await self.publish(event_for(spec, state, self.launcher, reason))
        if current is None:
            await self.ensure_run(spec, "launched")
        merged = dict(metrics or {})
        if reason is not None:
            merged["reason"] = reason
        await self.store.pool.execute(
            f"UPDATE runs SET status = $2, metrics = metrics || $3::jsonb, updated_at = now()"
            f" WHERE run_id = $1 AND {_RANK_SQL} < $4",
            spec.run_id,
            state,
            merged,
            RANK[state],
        )
        log.info("run %s", state, extra={"run_id": spec.run_id, "reason": reason})
        return True

    async def refuse(
        self, spec: RunSpec, state: TrainingState, reason: str, extra: dict[str, Any]
    ) -> bool:
        """Record a run that was never launched (over budget, unplannable), once."""
        if await self.status(spec.run_id) is not None:
            return False
        await self.publish(event_for(spec, state, self.launcher, reason))
        await self.ensure_run(spec, state, extra)
        await self.store.pool.execute(
            "UPDATE runs SET metrics = metrics || $2::jsonb WHERE run_id = $1",
            spec.run_id,
            {"reason": reason},
        )
        return True

    async def record_handle(self, run_id: str, handle: str | None) -> None:
        """What the launcher created (``job/<name>``, ``pid N``): a run row without one was
        recorded but maybe never launched, and is launched again (launchers adopt)."""
        await self.store.pool.execute(
            "UPDATE runs SET spec = spec || jsonb_build_object('handle', $2::text)"
            " WHERE run_id = $1",
            run_id,
            handle or "unknown",
        )

    async def spent_today(self) -> float:
        """Estimated GPU-hours of the runs launched in the last 24 hours."""
        value = await self.store.pool.fetchval(
            "SELECT coalesce(sum((spec->'budget'->>'gpu_hours')::float8), 0) FROM runs"
            " WHERE created_at > now() - interval '1 day' AND status <> 'over_budget'"
        )
        return float(value or 0.0)

    async def on_update(self, update: RunUpdate) -> None:
        """A launcher's observation (Job condition, exit code)."""
        if update.spec is None:
            log.warning("update without a run spec ignored", extra={"run_id": update.run_id})
            return
        await self.advance(update.spec, update.state, update.reason)
