"""The Postgres system of record: transcripts, rollouts, groups and dataset releases.

Writes are batched (one ``INSERT ... SELECT FROM unnest(...)`` per table) and idempotent
(``ON CONFLICT DO NOTHING``); each returns the ids that were new, which is what a caller
publishes. Redelivered input therefore changes nothing, including the group counters,
which are bumped in the same transaction and only for new rows.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import AsyncIterator, Sequence
from datetime import datetime
from typing import Any, Literal

import asyncpg

from rlstream.rollout import ScoredRollout
from rlstream.storage._base import create_pool
from rlstream.storage._buffers import BufferOps
from rlstream.storage._datasets import DatasetOps
from rlstream.storage._erasure import ErasureOps
from rlstream.storage._heldout import HeldoutOps
from rlstream.storage._lineage import LineageOps
from rlstream.storage._registry import RegistryOps
from rlstream.storage._retention import RetentionOps
from rlstream.storage._rows import (
    BUMP_GROUPS,
    INSERT_ROLLOUTS,
    INSERT_TRANSCRIPTS,
    ROLLOUT_COLUMNS,
    check_redacted,
    rollout_columns,
    rollout_features,
    rollout_group,
    row_to_group,
    row_to_rollout,
    transcript_columns,
    unique_by,
)
from rlstream.storage._status import StatusOps
from rlstream.storage._training import TrainingOps
from rlstream.storage.records import GroupKey, GroupStats
from rlstream.transcript import Transcript

__all__ = ["Store", "rollout_features", "rollout_group"]


class Store(
    DatasetOps,
    HeldoutOps,
    LineageOps,
    TrainingOps,
    RegistryOps,
    BufferOps,
    RetentionOps,
    ErasureOps,
    StatusOps,
):
    """All Postgres reads and writes rlstream makes. Construct with :meth:`connect`."""

    @classmethod
    async def connect(cls, dsn: str, *, min_size: int = 1, max_size: int = 10) -> Store:
        return cls(await create_pool(dsn, min_size=min_size, max_size=max_size))

    # ---- transcripts -------------------------------------------------------------------

    async def save_transcripts(
        self, transcripts: Sequence[Transcript], *, allow_unredacted: bool = False
    ) -> list[str]:
        """Store transcripts; return the conversation ids that were not stored before."""
        check_redacted(transcripts, allow_unredacted)
        batch = unique_by(transcripts, lambda t: t.conversation_id)
        if not batch:
            return []
        async with self._pool.acquire() as conn:
            present = await _existing(conn, "transcripts", "conversation_id", batch)
            batch = [t for t in batch if t.conversation_id not in present]
            if not batch:
                return []
            rows = await conn.fetch(INSERT_TRANSCRIPTS, *transcript_columns(batch))
        return [str(r[0]) for r in rows]

    async def get_transcript(self, conversation_id: str) -> Transcript | None:
        body = await self._pool.fetchval(
            "SELECT body FROM transcripts WHERE conversation_id = $1", conversation_id
        )
        return None if body is None else Transcript.model_validate(body)

    async def get_transcripts(self, conversation_ids: Sequence[str]) -> dict[str, Transcript]:
        """The stored transcripts among ``conversation_ids`` (missing ones are absent)."""
        if not conversation_ids:
            return {}
        rows = await self._pool.fetch(
            "SELECT conversation_id, body FROM transcripts WHERE conversation_id = ANY($1::text[])",
            list(conversation_ids),
        )
        return {str(r[0]): Transcript.model_validate(r[1]) for r in rows}

    async def stored_ids(
        self, table: Literal["transcripts", "rollouts"], ids: Sequence[str]
    ) -> set[str]:
        """Which of ``ids`` have a row in ``table`` (by conversation id / rollout id): what a
        replayed input that the seen keys know is checked against (delivery.publish)."""
        if not ids:
            return set()
        column = {"transcripts": "conversation_id", "rollouts": "rollout_id"}[table]
        rows = await self._pool.fetch(
            f"SELECT {column} FROM {table} WHERE {column} = ANY($1::text[])", list(ids)
        )
        return {str(r[0]) for r in rows}

    # ---- rollouts and groups -----------------------------------------------------------

    async def save_rollouts(
        self, rollouts: Sequence[ScoredRollout], *, allow_unredacted: bool = False
    ) -> list[str]:
        """Store graded rollouts (and their transcripts, if missing) in one transaction.

        Returns the rollout ids that were new; only those bump their group's counters.
        """
        check_redacted((r.transcript for r in rollouts), allow_unredacted)
        batch = unique_by(rollouts, lambda r: r.rollout_id)
        if not batch:
            return []
        async with self._pool.acquire() as conn, conn.transaction():
            # Skip what is already stored before shipping it: a redelivered batch, and
            # transcripts that ingest saved first (the usual case), cost one id lookup
            # instead of a round trip of full bodies. ON CONFLICT still settles races.
            stored = await _existing(conn, "rollouts", "rollout_id", batch)
            batch = [r for r in batch if r.rollout_id not in stored]
            if not batch:
                return []
            transcripts = unique_by((r.transcript for r in batch), lambda t: t.conversation_id)
            present = await _existing(conn, "transcripts", "conversation_id", transcripts)
            missing = [t for t in transcripts if t.conversation_id not in present]
            if missing:
                await conn.execute(INSERT_TRANSCRIPTS, *transcript_columns(missing))
            rows = await conn.fetch(INSERT_ROLLOUTS, *rollout_columns(batch))
            new = {str(r[0]) for r in rows}
            await self._bump_groups(conn, [r for r in batch if r.rollout_id in new])
        return [r.rollout_id for r in batch if r.rollout_id in new]

    @staticmethod
    async def _bump_groups(conn: asyncpg.Connection, new: Sequence[ScoredRollout]) -> None:
        n: Counter[GroupKey] = Counter()
        passes: Counter[GroupKey] = Counter()
        total: dict[GroupKey, float] = {}
        for r in new:
            g = rollout_group(r)
            n[g] += 1
            passes[g] += int(r.passed)
            total[g] = total.get(g, 0.0) + r.score
        if not n:
            return
        # a fixed order, so two writers never lock the same group rows in opposite orders
        keys = sorted(n, key=lambda g: (g.agent, g.reward_spec, g.task_key))
        await conn.execute(
            BUMP_GROUPS,
            [g.agent for g in keys],
            [g.reward_spec for g in keys],
            [g.task_key for g in keys],
            [n[g] for g in keys],
            [passes[g] for g in keys],
            [total[g] for g in keys],
        )

    async def get_rollouts(self, rollout_ids: Sequence[str]) -> list[ScoredRollout]:
        rows = await self._pool.fetch(
            f"SELECT {ROLLOUT_COLUMNS} FROM rollouts r JOIN transcripts t USING"
            " (conversation_id) WHERE r.rollout_id = ANY($1::text[]) ORDER BY r.rollout_id",
            list(rollout_ids),
        )
        return [row_to_rollout(r) for r in rows]

    async def pending_rollouts(
        self,
        agent: str | None,
        reward_spec: str,
        *,
        task_keys: Sequence[str] | None = None,
        limit: int | None = None,
    ) -> list[ScoredRollout]:
        """Rollouts not yet released in any dataset, ordered by task key then id."""
        rows = await self._pool.fetch(
            f"SELECT {ROLLOUT_COLUMNS} FROM rollouts r JOIN transcripts t USING"
            " (conversation_id) WHERE r.agent = $1 AND r.reward_spec = $2"
            " AND r.released_in IS NULL AND ($3::text[] IS NULL OR r.task_key = ANY($3))"
            " ORDER BY r.task_key, r.rollout_id LIMIT $4",
            agent or "",
            reward_spec,
            None if task_keys is None else list(task_keys),
            limit,
        )
        return [row_to_rollout(r) for r in rows]

    async def group_stats(
        self, agent: str | None, reward_spec: str, *, pending_only: bool = False
    ) -> list[GroupStats]:
        """Per-group counters: all rollouts (the ``groups`` table) or only unreleased ones."""
        if pending_only:
            sql = (
                "SELECT agent, reward_spec, task_key, count(*)::int AS n,"
                " count(*) FILTER (WHERE passed)::int AS passes, sum(score) AS sum_score"
                " FROM rollouts WHERE agent = $1 AND reward_spec = $2 AND released_in IS NULL"
                " GROUP BY agent, reward_spec, task_key ORDER BY task_key"
            )
        else:
            sql = (
                "SELECT agent, reward_spec, task_key, n, passes, sum_score FROM groups"
                " WHERE agent = $1 AND reward_spec = $2 ORDER BY task_key"
            )
        rows = await self._pool.fetch(sql, agent or "", reward_spec)
        return [row_to_group(r) for r in rows]

    async def iter_group_stats(self, batch: int = 5000) -> AsyncIterator[list[GroupStats]]:
        """Every group's counters, in batches (used to rebuild Redis)."""
        sql = "SELECT agent, reward_spec, task_key, n, passes, sum_score FROM groups"
        async for rows in self._batches(sql, (), batch):
            yield [row_to_group(r) for r in rows]

    async def iter_ids(
        self, kind: str, *, since: datetime | None = None, batch: int = 10000
    ) -> AsyncIterator[list[str]]:
        """Ids of ``kind`` ("rollout" or "conversation") created at or after ``since``."""
        table = {"rollout": "rollouts", "conversation": "transcripts"}[kind]
        column = f"{kind}_id"
        sql = f"SELECT {column} FROM {table} WHERE $1::timestamptz IS NULL OR created_at >= $1"
        async for rows in self._batches(sql, (since,), batch):
            yield [str(r[0]) for r in rows]

    async def iter_transcripts(self, batch: int = 1000) -> AsyncIterator[list[Transcript]]:
        sql = "SELECT body FROM transcripts ORDER BY conversation_id"
        async for rows in self._batches(sql, (), batch):
            yield [Transcript.model_validate(r[0]) for r in rows]

    async def _batches(
        self, sql: str, args: Sequence[Any], batch: int
    ) -> AsyncIterator[list[asyncpg.Record]]:
        """Stream a large result with a server-side cursor (constant memory)."""
        async with self._pool.acquire() as conn, conn.transaction():
            cursor = await conn.cursor(sql, *args)
            while rows := await cursor.fetch(batch):
                yield list(rows)


async def _existing(
    conn: asyncpg.Connection, table: str, column: str, items: Sequence[Any]
) -> set[str]:
    """Which of ``items`` (by their ``column`` attribute) are already stored."""
    rows = await conn.fetch(
        f"SELECT {column} FROM {table} WHERE {column} = ANY($1::text[])",
        [getattr(i, column) for i in items],
    )
    return {str(r[0]) for r in rows}
