"""Training runs, evaluations, the model registry and promotions.

Creates are idempotent (a retried launch or evaluation finds its row and changes nothing);
each create also records the lineage edge to its input, in the same transaction.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import asyncpg

from rlstream.storage._base import StoreBase
from rlstream.storage.errors import UnknownRecordError
from rlstream.storage.records import (
    Alias,
    EvaluationRecord,
    ModelRecord,
    PromotionRecord,
    RunRecord,
)

_EDGE = (
    "INSERT INTO lineage_edges (from_kind, from_id, to_kind, to_id)"
    " VALUES ($1, $2, $3, $4) ON CONFLICT DO NOTHING"
)
_PROMOTION_COLS = (
    "promotion_id, agent, model_id, alias, previous_model_id, run_id, evaluation_id, kind,"
    " target, reason, announced_at, created_at"
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

    # ---- evaluations -------------------------------------------------------------------

    async def save_evaluation(self, evaluation: EvaluationRecord) -> bool:
        values = evaluation.model_dump(exclude={"created_at"})
        async with self._pool.acquire() as conn, conn.transaction():
            new = await _insert(conn, "evaluations", values, "evaluation_id")
            if new and evaluation.run_id:
                await conn.execute(
                    _EDGE, "evaluation", evaluation.evaluation_id, "run", evaluation.run_id
                )
        return new

    async def get_evaluation(self, evaluation_id: str) -> EvaluationRecord | None:
        row = await self._pool.fetchrow(
            "SELECT evaluation_id, agent, baseline_model, candidate_model, decision, report,"
            " run_id, created_at FROM evaluations WHERE evaluation_id = $1",
            evaluation_id,
        )
        return None if row is None else EvaluationRecord.model_validate(dict(row))

    # ---- model registry and promotions -------------------------------------------------

    async def register_model(self, model: ModelRecord, *, evaluation_id: str | None = None) -> bool:
        """Insert the model unless its id exists; edges to its run and the evaluation that
        judged it are recorded either way (both idempotent)."""
        values = model.model_dump(exclude={"created_at"})
        async with self._pool.acquire() as conn, conn.transaction():
            new = await _insert(conn, "models", values, "model_id")
            if model.run_id:
                await conn.execute(_EDGE, "model", model.model_id, "run", model.run_id)
            if evaluation_id:
                await conn.execute(_EDGE, "model", model.model_id, "evaluation", evaluation_id)
        return new

    async def get_model(self, model_id: str) -> ModelRecord | None:
        row = await self._pool.fetchrow(
            "SELECT model_id, agent, run_id, path, metadata, created_at FROM models"
            " WHERE model_id = $1",
            model_id,
        )
        return None if row is None else ModelRecord.model_validate(dict(row))

    async def list_models(self, agent: str) -> list[ModelRecord]:
        rows = await self._pool.fetch(
            "SELECT model_id, agent, run_id, path, metadata, created_at FROM models"
            " WHERE agent = $1 ORDER BY created_at, model_id",
            agent,
        )
        return [ModelRecord.model_validate(dict(r)) for r in rows]

    async def aliases(self, agent: str) -> dict[str, str]:
        """``{"champion": model_id, "challenger": model_id}`` (only those set)."""
        rows = await self._pool.fetch(
            "SELECT alias, model_id FROM model_aliases WHERE agent = $1", agent
        )
        return {str(r["alias"]): str(r["model_id"]) for r in rows}

    async def promote(self, promotion: PromotionRecord) -> PromotionRecord:
        """Point ``alias`` at ``model_id`` and record the promotion, atomically.

        Idempotent by ``promotion_id``: a retry returns the recorded promotion and moves
        nothing. ``previous_model_id`` is filled from the alias as it stood.
        """
        async with self._pool.acquire() as conn, conn.transaction():
            # serialise promotions per agent (the alias row may not exist yet to lock)
            await conn.execute(
                "SELECT pg_advisory_xact_lock(hashtext('rlstream.alias:' || $1))",
                promotion.agent,
            )
            existing = await self._promotion(conn, promotion.promotion_id)
            if existing is not None:
                return existing
            if not await conn.fetchval(
                "SELECT 1 FROM models WHERE model_id = $1", promotion.model_id
            ):
                raise UnknownRecordError(f"unknown model {promotion.model_id}")
            previous = await conn.fetchval(
                "SELECT model_id FROM model_aliases WHERE agent = $1 AND alias = $2",
                promotion.agent,
                promotion.alias,
            )
            record = promotion.model_copy(update={"previous_model_id": previous})
            values = record.model_dump(exclude={"created_at", "announced_at"})
            await _insert(conn, "promotions", values, "promotion_id")
            await conn.execute(
                "INSERT INTO model_aliases (agent, alias, model_id) VALUES ($1, $2, $3)"
                " ON CONFLICT (agent, alias) DO UPDATE SET model_id = excluded.model_id,"
                " updated_at = now()",
                promotion.agent,
                promotion.alias,
                promotion.model_id,
            )
            await conn.execute(
                _EDGE, "promotion", promotion.promotion_id, "model", promotion.model_id
            )
            if promotion.evaluation_id:
                await conn.execute(
                    _EDGE, "promotion", promotion.promotion_id, "evaluation",
                    promotion.evaluation_id,
                )  # fmt: skip
            stored = await self._promotion(conn, promotion.promotion_id)
        assert stored is not None
        return stored

    @staticmethod
    async def _promotion(conn: asyncpg.Connection, promotion_id: str) -> PromotionRecord | None:
        row = await conn.fetchrow(
            f"SELECT {_PROMOTION_COLS} FROM promotions WHERE promotion_id = $1", promotion_id
        )
        return None if row is None else PromotionRecord.model_validate(dict(row))

    async def get_alias(self, agent: str, alias: Alias) -> str | None:
        value = await self._pool.fetchval(
            "SELECT model_id FROM model_aliases WHERE agent = $1 AND alias = $2", agent, alias
        )
        return None if value is None else str(value)

    async def list_promotions(self, agent: str) -> Sequence[PromotionRecord]:
        rows = await self._pool.fetch(
            f"SELECT {_PROMOTION_COLS} FROM promotions WHERE agent = $1"
            " ORDER BY created_at, promotion_id",
            agent,
        )
        return [PromotionRecord.model_validate(dict(r)) for r in rows]

    async def get_promotion(self, promotion_id: str) -> PromotionRecord | None:
        async with self._pool.acquire() as conn:
            return await self._promotion(conn, promotion_id)

    async def mark_announced(self, promotion_id: str) -> None:
        """The promotion's deploy and event went out (set once; later calls keep the time)."""
        await self._pool.execute(
            "UPDATE promotions SET announced_at = coalesce(announced_at, now())"
            " WHERE promotion_id = $1",
            promotion_id,
        )

    async def unannounced_promotions(self) -> list[PromotionRecord]:
        """Committed promotions whose deploy or event did not go out yet, oldest first."""
        rows = await self._pool.fetch(
            f"SELECT {_PROMOTION_COLS} FROM promotions WHERE announced_at IS NULL"
            " ORDER BY created_at, promotion_id"
        )
        return [PromotionRecord.model_validate(dict(r)) for r in rows]

    async def evaluations_for_run(self, run_id: str) -> list[EvaluationRecord]:
        rows = await self._pool.fetch(
            "SELECT evaluation_id, agent, baseline_model, candidate_model, decision, report,"
            " run_id, created_at FROM evaluations WHERE run_id = $1 ORDER BY created_at",
            run_id,
        )
        return [EvaluationRecord.model_validate(dict(r)) for r in rows]

    async def find_model_ids(self, prefix: str) -> list[str]:
        """Model ids starting with ``prefix`` (the CLI accepts unique prefixes)."""
        rows = await self._pool.fetch(
            "SELECT model_id FROM models WHERE starts_with(model_id, $1) ORDER BY model_id"
            " LIMIT 10",
            prefix,
        )
        return [str(r[0]) for r in rows]
