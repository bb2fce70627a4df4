"""Read-only summaries for ``rlstream status`` and the live view of ``rlstream up``.

Why here: the status screen needs counts over the pool and the newest runs and
evaluations, and only the storage package speaks SQL. Each query is one round trip that
uses an existing index or a small table; none takes a lock a writer waits for.
"""

from __future__ import annotations

from datetime import datetime

from pydantic import BaseModel, ConfigDict

from rlstream.storage._base import StoreBase


class _Frozen(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")


class PoolCounts(_Frozen):
    """Groups (agent, reward spec, task key) and rollouts, pending and released."""

    groups_pending: int
    groups_released: int
    rollouts_pending: int
    rollouts_released: int
    datasets: int


class RunSummary(_Frozen):
    run_id: str
    agent: str
    backend: str
    method: str
    status: str
    dataset_id: str | None
    updated_at: datetime


class EvaluationSummary(_Frozen):
    evaluation_id: str
    run_id: str | None
    agent: str
    candidate_model: str
    decision: str
    created_at: datetime


_POOL = (
    "SELECT"
    " count(DISTINCT (agent, reward_spec, task_key)) FILTER (WHERE released_in IS NULL)::int,"
    " count(DISTINCT (agent, reward_spec, task_key)) FILTER (WHERE released_in IS NOT NULL)::int,"
    " count(*) FILTER (WHERE released_in IS NULL)::int,"
    " count(*) FILTER (WHERE released_in IS NOT NULL)::int,"
    " (SELECT count(*) FROM datasets)::int"
    " FROM rollouts"
)


class StatusOps(StoreBase):
    async def pool_counts(self) -> PoolCounts:
        row = await self._pool.fetchrow(_POOL)
        assert row is not None  # an aggregate always returns one row
        return PoolCounts(
            groups_pending=row[0],
            groups_released=row[1],
            rollouts_pending=row[2],
            rollouts_released=row[3],
            datasets=row[4],
        )

    async def recent_runs(self, limit: int = 5) -> tuple[dict[str, int], list[RunSummary]]:
        """(runs per status, the ``limit`` most recently changed runs, newest first)."""
        counts = await self._pool.fetch("SELECT status, count(*)::int FROM runs GROUP BY status")
        rows = await self._pool.fetch(
            "SELECT run_id, agent, backend, method, status, dataset_id, updated_at FROM runs"
            " ORDER BY updated_at DESC, run_id LIMIT $1",
            limit,
        )
        return {str(r[0]): int(r[1]) for r in counts}, [RunSummary(**dict(r)) for r in rows]

    async def recent_evaluations(
        self, limit: int = 5
    ) -> tuple[dict[str, int], list[EvaluationSummary]]:
        """(evaluations per decision, the ``limit`` newest, newest first)."""
        counts = await self._pool.fetch(
            "SELECT decision, count(*)::int FROM evaluations GROUP BY decision"
        )
        rows = await self._pool.fetch(
            "SELECT evaluation_id, run_id, agent, candidate_model, decision, created_at"
            " FROM evaluations ORDER BY created_at DESC, evaluation_id LIMIT $1",
            limit,
        )
        return {str(r[0]): int(r[1]) for r in counts}, [EvaluationSummary(**dict(r)) for r in rows]
