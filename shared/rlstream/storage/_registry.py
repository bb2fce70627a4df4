"""Evaluations, the model registry, aliases and promotions.

An evaluation is recorded in one transaction (run, candidate model, evaluation row, lineage
edges and, on a ``promote`` decision, the ``challenger`` alias): a crash leaves all of it
or none, so a redelivered run either finds its decision or evaluates afresh. A promotion
may compare-and-set the alias it moves: it installs the candidate only while the alias
still names the model the candidate was evaluated against.
"""

from __future__ import annotations

from collections.abc import Sequence
from enum import Enum

import asyncpg

from rlstream.storage._base import StoreBase
from rlstream.storage._training import _EDGE, _insert
from rlstream.storage.errors import AliasMovedError, UnknownRecordError
from rlstream.storage.records import (
    Alias,
    EvaluationRecord,
    LineageEdge,
    ModelRecord,
    PromotionRecord,
    RunRecord,
)

_PROMOTION_COLS = (
    "promotion_id, agent, model_id, alias, previous_model_id, run_id, evaluation_id, kind,"
    " target, reason, announced_at, created_at"
)
_EVALUATION_COLS = (
    "evaluation_id, agent, baseline_model, candidate_model, decision, report, run_id,"
    " baseline_champion, refusal, refused_at, created_at"
)
_LOCK = "SELECT pg_advisory_xact_lock(hashtext('rlstream.alias:' || $1))"


class Unchecked(Enum):
    ANY = "any"  # ``expect_previous``'s default: move the alias whatever it names now


async def _evaluation(
    conn: asyncpg.Connection | asyncpg.Pool, evaluation_id: str
) -> EvaluationRecord | None:
    row = await conn.fetchrow(
        f"SELECT {_EVALUATION_COLS} FROM evaluations WHERE evaluation_id = $1", evaluation_id
    )
    return None if row is None else EvaluationRecord.model_validate(dict(row))


async def _promotion(
    conn: asyncpg.Connection | asyncpg.Pool, promotion_id: str
) -> PromotionRecord | None:
    row = await conn.fetchrow(
        f"SELECT {_PROMOTION_COLS} FROM promotions WHERE promotion_id = $1", promotion_id
    )
    return None if row is None else PromotionRecord.model_validate(dict(row))


async def _move_alias(
    conn: asyncpg.Connection, promotion: PromotionRecord, previous: str | None, announced: bool
) -> None:
    """The promotions row, the alias upsert and the lineage edges (inside a transaction)."""
    record = promotion.model_copy(update={"previous_model_id": previous})
    values = record.model_dump(exclude={"created_at", "announced_at"})
    await _insert(conn, "promotions", values, "promotion_id")
    if announced:  # an alias nothing deploys (challenger): there is nothing to announce
        await conn.execute(
            "UPDATE promotions SET announced_at = now() WHERE promotion_id = $1",
            promotion.promotion_id,
        )
    await conn.execute(
        "INSERT INTO model_aliases (agent, alias, model_id) VALUES ($1, $2, $3)"
        " ON CONFLICT (agent, alias) DO UPDATE SET model_id = excluded.model_id,"
        " updated_at = now()",
        promotion.agent,
        promotion.alias,
        promotion.model_id,
    )
    await conn.execute(_EDGE, "promotion", promotion.promotion_id, "model", promotion.model_id)
    if promotion.evaluation_id:
        await conn.execute(
            _EDGE, "promotion", promotion.promotion_id, "evaluation", promotion.evaluation_id
        )


class RegistryOps(StoreBase):
    # ---- evaluations -------------------------------------------------------------------

    async def record_evaluation(
        self,
        run: RunRecord,
        model: ModelRecord,
        evaluation: EvaluationRecord,
        *,
        edges: Sequence[LineageEdge] = (),
        challenger: PromotionRecord | None = None,
    ) -> EvaluationRecord:
        """Run (unless known), candidate model, evaluation, their lineage edges and the
        ``challenger`` move, in one transaction. An evaluation id already stored returns the
        stored row and writes nothing: the first decision stands."""
        async with self._pool.acquire() as conn, conn.transaction():
            await conn.execute(_LOCK, evaluation.agent)
            stored = await _evaluation(conn, evaluation.evaluation_id)
            if stored is not None:
                return stored
            run_values = run.model_dump(exclude={"created_at", "updated_at"})
            if await _insert(conn, "runs", run_values, "run_id") and run.dataset_id:
                await conn.execute(_EDGE, "run", run.run_id, "dataset", run.dataset_id)
            for e in edges:
                await conn.execute(_EDGE, e.from_kind, e.from_id, e.to_kind, e.to_id)
            await _insert(conn, "models", model.model_dump(exclude={"created_at"}), "model_id")
            if model.run_id:
                await conn.execute(_EDGE, "model", model.model_id, "run", model.run_id)
            await conn.execute(
                _EDGE, "model", model.model_id, "evaluation", evaluation.evaluation_id
            )
            values = evaluation.model_dump(exclude={"created_at", "refusal", "refused_at"})
            await _insert(conn, "evaluations", values, "evaluation_id")
            if evaluation.run_id:
                await conn.execute(
                    _EDGE, "evaluation", evaluation.evaluation_id, "run", evaluation.run_id
                )
            if challenger is not None:
                previous = await self._alias(conn, challenger.agent, challenger.alias)
                await _move_alias(conn, challenger, previous, announced=True)
            stored = await _evaluation(conn, evaluation.evaluation_id)
        assert stored is not None
        return stored

    async def save_evaluation(self, evaluation: EvaluationRecord) -> bool:
        """An evaluation row alone (tools, tests; the gate's path: ``record_evaluation``)."""
        values = evaluation.model_dump(exclude={"created_at", "refusal", "refused_at"})
        async with self._pool.acquire() as conn, conn.transaction():
            new = await _insert(conn, "evaluations", values, "evaluation_id")
            if new and evaluation.run_id:
                await conn.execute(
                    _EDGE, "evaluation", evaluation.evaluation_id, "run", evaluation.run_id
                )
        return new

    async def get_evaluation(self, evaluation_id: str) -> EvaluationRecord | None:
        return await _evaluation(self._pool, evaluation_id)

    async def evaluations_for_run(self, run_id: str) -> list[EvaluationRecord]:
        rows = await self._pool.fetch(
            f"SELECT {_EVALUATION_COLS} FROM evaluations WHERE run_id = $1 ORDER BY created_at",
            run_id,
        )
        return [EvaluationRecord.model_validate(dict(r)) for r in rows]

    async def evaluations_of_model(self, model_id: str) -> list[EvaluationRecord]:
        """The evaluations that judged ``model_id`` as the candidate, oldest first."""
        rows = await self._pool.fetch(
            f"SELECT {_EVALUATION_COLS} FROM evaluations WHERE candidate_model = $1"
            " ORDER BY created_at, evaluation_id",
            model_id,
        )
        return [EvaluationRecord.model_validate(dict(r)) for r in rows]

    # ---- models ------------------------------------------------------------------------

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

    async def find_model_ids(self, prefix: str) -> list[str]:
        """Model ids starting with ``prefix`` (the CLI accepts unique prefixes)."""
        rows = await self._pool.fetch(
            "SELECT model_id FROM models WHERE starts_with(model_id, $1) ORDER BY model_id"
            " LIMIT 10",
            prefix,
        )
        return [str(r[0]) for r in rows]

    # ---- aliases and promotions --------------------------------------------------------

    async def aliases(self, agent: str) -> dict[str, str]:
        """``{"champion": model_id, "challenger": model_id}`` (only those set)."""
        rows = await self._pool.fetch(
            "SELECT alias, model_id FROM model_aliases WHERE agent = $1", agent
        )
        return {str(r["alias"]): str(r["model_id"]) for r in rows}

    async def get_alias(self, agent: str, alias: Alias) -> str | None:
        return await self._alias(self._pool, agent, alias)

    @staticmethod
    async def _alias(
        conn: asyncpg.Connection | asyncpg.Pool, agent: str, alias: Alias
    ) -> str | None:
        value = await conn.fetchval(
            "SELECT model_id FROM model_aliases WHERE agent = $1 AND alias = $2", agent, alias
        )
        return None if value is None else str(value)

    async def promote(
        self,
        promotion: PromotionRecord,
        *,
        expect_previous: str | Unchecked | None = Unchecked.ANY,
    ) -> PromotionRecord:
        """Point ``alias`` at ``model_id`` and record the promotion, atomically.

        Idempotent by ``promotion_id``: a retry returns the recorded promotion and moves
        nothing. ``previous_model_id`` is filled from the alias as it stood. With
        ``expect_previous`` the alias moves only from that model (None: from unset); else
        nothing moves, the promotion's evaluation records the refusal in the same
        transaction, and :class:`AliasMovedError` is raised.
        """
        moved: AliasMovedError | None = None
        stored: PromotionRecord | None = None
        async with self._pool.acquire() as conn, conn.transaction():
            # serialise promotions per agent (the alias row may not exist yet to lock)
            await conn.execute(_LOCK, promotion.agent)
            existing = await _promotion(conn, promotion.promotion_id)
            if existing is not None:
                return existing
            if not await conn.fetchval(
                "SELECT 1 FROM models WHERE model_id = $1", promotion.model_id
            ):
                raise UnknownRecordError(f"unknown model {promotion.model_id}")
            previous = await self._alias(conn, promotion.agent, promotion.alias)
            if not isinstance(expect_previous, Unchecked) and previous != expect_previous:
                moved = AliasMovedError.of(promotion, expect_previous, previous)
                if promotion.evaluation_id and previous != promotion.model_id:
                    await conn.execute(
                        "UPDATE evaluations SET refusal = coalesce(refusal, $2),"
                        " refused_at = coalesce(refused_at, now()) WHERE evaluation_id = $1",
                        promotion.evaluation_id,
                        str(moved),
                    )
            else:
                await _move_alias(conn, promotion, previous, announced=False)
                stored = await _promotion(conn, promotion.promotion_id)
        if moved is not None:
            raise moved
        assert stored is not None
        return stored

    async def list_promotions(self, agent: str) -> Sequence[PromotionRecord]:
        rows = await self._pool.fetch(
            f"SELECT {_PROMOTION_COLS} FROM promotions WHERE agent = $1"
            " ORDER BY created_at, promotion_id",
            agent,
        )
        return [PromotionRecord.model_validate(dict(r)) for r in rows]

    async def get_promotion(self, promotion_id: str) -> PromotionRecord | None:
        return await _promotion(self._pool, promotion_id)

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
