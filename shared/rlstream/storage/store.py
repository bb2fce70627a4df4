"""The Postgres system of record: transcripts, rollouts, groups and dataset releases.

Writes are batched (one ``INSERT ... SELECT FROM unnest(...)`` per table) and idempotent
(``ON CONFLICT DO NOTHING``); each returns the ids that were new, which is what a caller
publishes. Redelivered input therefore changes nothing, including the group counters,
which are bumped in the same transaction and only for new rows.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import AsyncIterator, Callable, Iterable, Sequence
from datetime import datetime
from typing import Any, TypeVar

import asyncpg

from rlstream.rewards.base import RewardResult
from rlstream.rewards.scored import ScoredRollout
from rlstream.storage._base import create_pool, dumps
from rlstream.storage._buffers import BufferOps
from rlstream.storage._lineage import LineageOps
from rlstream.storage._training import TrainingOps
from rlstream.storage.errors import (
    AlreadyReleasedError,
    UnknownRecordError,
    UnredactedTranscriptError,
)
from rlstream.storage.records import DatasetRecord, GroupKey, GroupStats
from rlstream.transcript import Transcript

_T = TypeVar("_T")

_INSERT_TRANSCRIPTS = """
INSERT INTO transcripts (conversation_id, task_key, agent, redacted, source_kind,
    source_topic, source_partition, source_offset, source_file, source_line, body)
SELECT t.c, t.k, t.a, t.r, t.sk, t.st, t.sp, t.so, t.sf, t.sl, t.b::jsonb
FROM unnest($1::text[], $2::text[], $3::text[], $4::bool[], $5::text[], $6::text[],
            $7::int[], $8::bigint[], $9::text[], $10::int[], $11::text[])
     AS t(c, k, a, r, sk, st, sp, so, sf, sl, b)
ON CONFLICT (conversation_id) DO NOTHING
RETURNING conversation_id
"""

_INSERT_ROLLOUTS = """
INSERT INTO rollouts (rollout_id, conversation_id, task_key, agent, reward_spec, score,
    passed, results, features)
SELECT t.i, t.c, t.k, t.a, t.s, t.sc, t.p, t.r::jsonb, t.f::jsonb
FROM unnest($1::text[], $2::text[], $3::text[], $4::text[], $5::text[], $6::float8[],
            $7::bool[], $8::text[], $9::text[]) AS t(i, c, k, a, s, sc, p, r, f)
ON CONFLICT (rollout_id) DO NOTHING
RETURNING rollout_id
"""

_BUMP_GROUPS = """
INSERT INTO groups (agent, reward_spec, task_key, n, passes, sum_score)
SELECT * FROM unnest($1::text[], $2::text[], $3::text[], $4::int[], $5::int[], $6::float8[])
ON CONFLICT (agent, reward_spec, task_key) DO UPDATE SET
    n = groups.n + excluded.n,
    passes = groups.passes + excluded.passes,
    sum_score = groups.sum_score + excluded.sum_score,
    updated_at = now()
"""

_ROLLOUT_COLUMNS = "r.rollout_id, r.reward_spec, r.score, r.passed, r.results, t.body AS transcript"


def _check_redacted(transcripts: Iterable[Transcript], allow_unredacted: bool) -> None:
    if allow_unredacted:
        return
    bad = [t.conversation_id for t in transcripts if not t.redacted]
    if bad:
        raise UnredactedTranscriptError(
            f"{len(bad)} transcript(s) not redacted, refusing to store: {bad[:5]}"
        )


def _transcript_columns(transcripts: Sequence[Transcript]) -> list[list[Any]]:
    cols: list[list[Any]] = [[] for _ in range(11)]
    for t in transcripts:
        s = t.source
        row = (
            t.conversation_id, t.task_key, t.agent, t.redacted, s.kind, s.topic,
            s.partition, s.offset, s.file, s.line, t.model_dump_json(),
        )  # fmt: skip
        for col, value in zip(cols, row, strict=True):
            col.append(value)
    return cols


def _rollout_columns(rollouts: Sequence[ScoredRollout]) -> list[list[Any]]:
    cols: list[list[Any]] = [[] for _ in range(9)]
    for r in rollouts:
        g = rollout_group(r)
        results = [res.model_dump(mode="json") for res in r.results]
        row = (
            r.rollout_id, r.conversation_id, g.task_key, g.agent, g.reward_spec,
            r.score, r.passed, dumps(results), dumps(rollout_features(r)),
        )  # fmt: skip
        for col, value in zip(cols, row, strict=True):
            col.append(value)
    return cols


def rollout_features(rollout: ScoredRollout) -> dict[str, float]:
    """Every reward's surface features in one flat dict (later rewards win a name clash)."""
    merged: dict[str, float] = {}
    for result in rollout.results:
        merged.update(result.features)
    return merged


def rollout_group(rollout: ScoredRollout) -> GroupKey:
    return GroupKey(
        agent=rollout.transcript.agent or "",
        reward_spec=rollout.reward_spec,
        task_key=rollout.task_key,
    )


def _row_to_rollout(row: asyncpg.Record) -> ScoredRollout:
    return ScoredRollout(
        rollout_id=row["rollout_id"],
        transcript=Transcript.model_validate(row["transcript"]),
        results=tuple(RewardResult.model_validate(r) for r in row["results"]),
        score=row["score"],
        passed=row["passed"],
        reward_spec=row["reward_spec"],
    )


def _unique_by(items: Iterable[_T], key: Callable[[_T], str]) -> list[_T]:
    seen: dict[str, _T] = {}
    for item in items:
        seen.setdefault(key(item), item)
    return [seen[k] for k in sorted(seen)]


class Store(LineageOps, TrainingOps, BufferOps):
    """All Postgres reads and writes rlstream makes. Construct with :meth:`connect`."""

    @classmethod
    async def connect(cls, dsn: str, *, min_size: int = 1, max_size: int = 10) -> Store:
        return cls(await create_pool(dsn, min_size=min_size, max_size=max_size))

    # ---- transcripts -------------------------------------------------------------------

    async def save_transcripts(
        self, transcripts: Sequence[Transcript], *, allow_unredacted: bool = False
    ) -> list[str]:
        """Store transcripts; return the conversation ids that were not stored before."""
        _check_redacted(transcripts, allow_unredacted)
        batch = _unique_by(transcripts, lambda t: t.conversation_id)
        if not batch:
            return []
        async with self._pool.acquire() as conn:
            rows = await conn.fetch(_INSERT_TRANSCRIPTS, *_transcript_columns(batch))
        return [str(r[0]) for r in rows]

    async def get_transcript(self, conversation_id: str) -> Transcript | None:
        body = await self._pool.fetchval(
            "SELECT body FROM transcripts WHERE conversation_id = $1", conversation_id
        )
        return None if body is None else Transcript.model_validate(body)

    # ---- rollouts and groups -----------------------------------------------------------

    async def save_rollouts(
        self, rollouts: Sequence[ScoredRollout], *, allow_unredacted: bool = False
    ) -> list[str]:
        """Store graded rollouts (and their transcripts, if missing) in one transaction.

        Returns the rollout ids that were new; only those bump their group's counters.
        """
        _check_redacted((r.transcript for r in rollouts), allow_unredacted)
        batch = _unique_by(rollouts, lambda r: r.rollout_id)
        if not batch:
            return []
        async with self._pool.acquire() as conn, conn.transaction():
            # Skip what is already stored before shipping it: a redelivered batch, and
            # transcripts that ingest saved first (the usual case), cost one id lookup
            # instead of a round trip of full bodies. ON CONFLICT still settles races.
            known = await conn.fetch(
                "SELECT rollout_id FROM rollouts WHERE rollout_id = ANY($1::text[])",
                [r.rollout_id for r in batch],
            )
            stored = {str(r[0]) for r in known}
            batch = [r for r in batch if r.rollout_id not in stored]
            if not batch:
                return []
            transcripts = _unique_by((r.transcript for r in batch), lambda t: t.conversation_id)
            have = await conn.fetch(
                "SELECT conversation_id FROM transcripts WHERE conversation_id = ANY($1::text[])",
                [t.conversation_id for t in transcripts],
            )
            present = {str(r[0]) for r in have}
            missing = [t for t in transcripts if t.conversation_id not in present]
            if missing:
                await conn.execute(_INSERT_TRANSCRIPTS, *_transcript_columns(missing))
            rows = await conn.fetch(_INSERT_ROLLOUTS, *_rollout_columns(batch))
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
            _BUMP_GROUPS,
            [g.agent for g in keys],
            [g.reward_spec for g in keys],
            [g.task_key for g in keys],
            [n[g] for g in keys],
            [passes[g] for g in keys],
            [total[g] for g in keys],
        )

    async def get_rollouts(self, rollout_ids: Sequence[str]) -> list[ScoredRollout]:
        rows = await self._pool.fetch(
            f"SELECT {_ROLLOUT_COLUMNS} FROM rollouts r JOIN transcripts t USING"
            " (conversation_id) WHERE r.rollout_id = ANY($1::text[]) ORDER BY r.rollout_id",
            list(rollout_ids),
        )
        return [_row_to_rollout(r) for r in rows]

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
            f"SELECT {_ROLLOUT_COLUMNS} FROM rollouts r JOIN transcripts t USING"
            " (conversation_id) WHERE r.agent = $1 AND r.reward_spec = $2"
            " AND r.released_in IS NULL AND ($3::text[] IS NULL OR r.task_key = ANY($3))"
            " ORDER BY r.task_key, r.rollout_id LIMIT $4",
            agent or "",
            reward_spec,
            None if task_keys is None else list(task_keys),
            limit,
        )
        return [_row_to_rollout(r) for r in rows]

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
        return [_row_to_group(r) for r in rows]

    async def iter_group_stats(self, batch: int = 5000) -> AsyncIterator[list[GroupStats]]:
        """Every group's counters, in batches (used to rebuild Redis)."""
        sql = "SELECT agent, reward_spec, task_key, n, passes, sum_score FROM groups"
        async for rows in self._batches(sql, (), batch):
            yield [_row_to_group(r) for r in rows]

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

    # ---- datasets ----------------------------------------------------------------------

    async def save_dataset(self, record: DatasetRecord) -> bool:
        """Record a dataset release; False when the same dataset id was already recorded."""
        async with self._pool.acquire() as conn:
            return await _insert_dataset(conn, record)

    async def get_dataset(self, dataset_id: str) -> DatasetRecord | None:
        row = await self._pool.fetchrow(
            "SELECT dataset_id, agent, reward_spec, manifest, path, n_rollouts, created_at"
            " FROM datasets WHERE dataset_id = $1",
            dataset_id,
        )
        return None if row is None else DatasetRecord.model_validate(dict(row))

    async def mark_released(self, dataset_id: str, rollout_ids: Sequence[str]) -> int:
        """Mark rollouts as released in ``dataset_id``; return how many were newly marked.

        All or nothing: if any rollout is unknown or already in *another* dataset, nothing
        is marked and :class:`AlreadyReleasedError` / :class:`UnknownRecordError` is raised.
        Re-marking rollouts already in this same dataset is a no-op (safe retries).
        """
        async with self._pool.acquire() as conn, conn.transaction():
            return await _mark_released(conn, dataset_id, rollout_ids)

    async def release_dataset(self, record: DatasetRecord, rollout_ids: Sequence[str]) -> int:
        """:meth:`save_dataset` + :meth:`mark_released` in one transaction."""
        async with self._pool.acquire() as conn, conn.transaction():
            await _insert_dataset(conn, record)
            return await _mark_released(conn, record.dataset_id, rollout_ids)

    async def released_rollout_ids(self, dataset_id: str) -> list[str]:
        rows = await self._pool.fetch(
            "SELECT rollout_id FROM rollouts WHERE released_in = $1 ORDER BY rollout_id",
            dataset_id,
        )
        return [str(r[0]) for r in rows]


def _row_to_group(row: asyncpg.Record) -> GroupStats:
    return GroupStats(
        key=GroupKey(agent=row["agent"], reward_spec=row["reward_spec"], task_key=row["task_key"]),
        n=row["n"],
        passes=row["passes"],
        sum_score=float(row["sum_score"] or 0.0),
    )


async def _insert_dataset(conn: asyncpg.Connection, record: DatasetRecord) -> bool:
    status = await conn.execute(
        "INSERT INTO datasets (dataset_id, agent, reward_spec, manifest, path, n_rollouts)"
        " VALUES ($1, $2, $3, $4, $5, $6) ON CONFLICT (dataset_id) DO NOTHING",
        record.dataset_id,
        record.agent,
        record.reward_spec,
        record.manifest,
        record.path,
        record.n_rollouts,
    )
    return str(status).endswith(" 1")


async def _mark_released(
    conn: asyncpg.Connection, dataset_id: str, rollout_ids: Sequence[str]
) -> int:
    ids = sorted(set(rollout_ids))
    if not await conn.fetchval("SELECT 1 FROM datasets WHERE dataset_id = $1", dataset_id):
        raise UnknownRecordError(f"unknown dataset {dataset_id}")
    rows = await conn.fetch(
        "SELECT rollout_id, released_in FROM rollouts WHERE rollout_id = ANY($1::text[])"
        " ORDER BY rollout_id FOR UPDATE",
        ids,
    )
    found = {str(r["rollout_id"]): r["released_in"] for r in rows}
    missing = [i for i in ids if i not in found]
    if missing:
        raise UnknownRecordError(f"{len(missing)} unknown rollout(s): {missing[:5]}")
    taken = [i for i, ds in found.items() if ds is not None and ds != dataset_id]
    if taken:
        raise AlreadyReleasedError(
            f"{len(taken)} rollout(s) already released in another dataset: {taken[:5]}", taken
        )
    status = await conn.execute(
        "UPDATE rollouts SET released_in = $1 WHERE rollout_id = ANY($2::text[])"
        " AND released_in IS NULL",
        dataset_id,
        ids,
    )
    await conn.execute(
        "UPDATE datasets SET n_rollouts = (SELECT count(*) FROM rollouts WHERE released_in = $1)"
        " WHERE dataset_id = $1",
        dataset_id,
    )
    return int(str(status).rsplit(" ", 1)[-1])
