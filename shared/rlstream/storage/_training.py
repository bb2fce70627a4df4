"""Training runs (evaluations, models and aliases: ``_registry.py``).

Creates are idempotent (a retried launch finds its row and changes nothing); each create
also records the lineage edge to its input, in the same transaction.
"""

from __future__ import annotations

from typing import Any

import asyncpg

from rlstream.storage._base import StoreBase
from rlstream.storage.errors import UnknownRecordError
from rlstream.storage.records import RunRecord

_EDGE = (
    "INSERT INTO lineage_edges (from_kind, from_id, to_kind, to_id)"
    " VALUES ($1, $2, $3, $4) ON CONFLICT DO NOTHING"
)
_RUN_COLS = (
    "run_id, agent, backend, method, status, dataset_id, image, argv_hash, backend_version,"
    " spec, metrics, artifact_path, created_at, updated_at"
)


def _inserted(status: str) -> bool:
    return str(status).endswith(" 1")


async def _insert(conn: asyncpg.Connection, table: str, values: dict[str, Any], key: str) -> bool:
    names = list(values)
    placeholders = ", ".join(f"${i}" for i in range(1, len(names) + 1))
    status = await conn.execute(
        f"INSERT INTO {table} ({', '.join(names)}) VALUES ({placeholders})"
        f" ON CONFLICT ({key}) DO NOTHING",
        *values.values(),
    )
    return _inserted(status)


class TrainingOps(StoreBase):
    # ---- runs --------------------------------------------------------------------------

    async def create_run(self, run: RunRecord) -> bool:
        """Insert the run unless its id exists; True when this call created it."""
        values = run.model_dump(exclude={"created_at", "updated_at"})
        async with self._pool.acquire() as conn, conn.transaction():
            new = await _insert(conn, "runs", values, "run_id")
            if new and run.dataset_id:
                await conn.execute(_EDGE, "run", run.run_id, "dataset", run.dataset_id)
        return new

    async def update_run(
        self,
        run_id: str,
        *,
        status: str | None = None,
        metrics: dict[str, Any] | None = None,
        artifact_path: str | None = None,
    ) -> RunRecord:
        """Change a run's status; ``metrics`` are merged into the stored ones."""
        row = await self._pool.fetchrow(
            "UPDATE runs SET status = coalesce($2, status),"
            " metrics = metrics || coalesce($3::jsonb, '{}'::jsonb),"
            f" artifact_path = coalesce($4, artifact_path), updated_at = now()"
            f" WHERE run_id = $1 RETURNING {_RUN_COLS}",
            run_id,
            status,
            metrics,
            artifact_path,
        )
        if row is None:
            raise UnknownRecordError(f"unknown run {run_id}")
        return RunRecord.model_validate(dict(row))

    async def get_run(self, run_id: str) -> RunRecord | None:
        row = await self._pool.fetchrow(f"SELECT {_RUN_COLS} FROM runs WHERE run_id = $1", run_id)
        return None if row is None else RunRecord.model_validate(dict(row))

    async def list_runs(
        self, *, agent: str | None = None, status: str | None = None
    ) -> list[RunRecord]:
        rows = await self._pool.fetch(
            f"SELECT {_RUN_COLS} FROM runs WHERE ($1::text IS NULL OR agent = $1)"
            " AND ($2::text IS NULL OR status = $2) ORDER BY created_at, run_id",
            agent,
            status,
        )
        return [RunRecord.model_validate(dict(r)) for r in rows]
