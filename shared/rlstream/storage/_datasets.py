"""Dataset releases: a rollout is released in at most one dataset, ever."""

from __future__ import annotations

from collections.abc import Sequence

import asyncpg

from rlstream.storage._base import StoreBase
from rlstream.storage.errors import AlreadyReleasedError, HeldoutReleaseError, UnknownRecordError
from rlstream.storage.records import DatasetRecord


class DatasetOps(StoreBase):
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

    async def released_conversations(self, conversation_ids: Sequence[str]) -> set[str]:
        """Which of these conversations feed some released dataset (held-out checks)."""
        rows = await self._pool.fetch(
            "SELECT DISTINCT conversation_id FROM rollouts"
            " WHERE conversation_id = ANY($1::text[]) AND released_in IS NOT NULL",
            list(conversation_ids),
        )
        return {str(r[0]) for r in rows}

    async def released_task_keys(self, agent: str | None, task_keys: Sequence[str]) -> set[str]:
        """Which of these task keys (prompts) some released dataset of ``agent`` contains.

        A held-out prompt set must come back empty here: a prompt the model trained on,
        under any reward spec, cannot measure generalisation.
        """
        rows = await self._pool.fetch(
            "SELECT DISTINCT task_key FROM rollouts WHERE agent = $1"
            " AND task_key = ANY($2::text[]) AND released_in IS NOT NULL",
            agent or "",
            list(task_keys),
        )
        return {str(r[0]) for r in rows}

    async def dataset_paths(self, agent: str | None) -> list[tuple[str, str]]:
        """(dataset id, path) of every release of ``agent``, oldest first: where its
        accumulated held-out prompts are read from."""
        rows = await self._pool.fetch(
            "SELECT dataset_id, path FROM datasets WHERE agent = $1"
            " ORDER BY created_at, dataset_id",
            agent or "",
        )
        return [(str(r[0]), str(r[1])) for r in rows]

    async def released_rollout_ids(self, dataset_id: str) -> list[str]:
        rows = await self._pool.fetch(
            "SELECT rollout_id FROM rollouts WHERE released_in = $1 ORDER BY rollout_id",
            dataset_id,
        )
        return [str(r[0]) for r in rows]


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
    try:
        status = await conn.execute(
            "UPDATE rollouts SET released_in = $1 WHERE rollout_id = ANY($2::text[])"
            " AND released_in IS NULL",
            dataset_id,
            ids,
        )
    except asyncpg.CheckViolationError as exc:  # trigger rollouts_refuse_heldout
        raise HeldoutReleaseError(str(exc)) from exc
    await conn.execute(
        "UPDATE datasets SET n_rollouts = (SELECT count(*) FROM rollouts WHERE released_in = $1)"
        " WHERE dataset_id = $1",
        dataset_id,
    )
    return int(str(status).rsplit(" ", 1)[-1])
