"""Open turn-delta buffers, so conversation assembly survives an ingest restart.

Deltas are appended under a ``delta_key`` (e.g. the Kafka topic/partition/offset or the
producer's sequence number): a redelivered delta is recognised and not appended twice.
A closed buffer refuses further turns with :class:`rlstream.errors.LateTurnError`.
Closing is idempotent and returns the turns, so a crash between closing and storing the
transcript can be retried.
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import timedelta

import asyncpg
from pydantic import JsonValue

from rlstream.errors import LateTurnError
from rlstream.storage._base import StoreBase
from rlstream.storage.records import TurnBuffer

_COLS = "conversation_id, turns, meta, first_seen, last_seen, closed"

_APPEND = f"""
INSERT INTO turn_buffers AS b (conversation_id, turns, delta_keys, meta)
VALUES ($1, $2::jsonb, $3::text[], $4::jsonb)
ON CONFLICT (conversation_id) DO UPDATE SET
    turns = b.turns || excluded.turns,
    delta_keys = b.delta_keys || excluded.delta_keys,
    meta = b.meta || excluded.meta,
    last_seen = now()
WHERE NOT b.closed AND NOT (b.delta_keys && excluded.delta_keys)
RETURNING {_COLS}
"""


def _buffer(row: asyncpg.Record) -> TurnBuffer:
    fields = {k: row[k] for k in ("conversation_id", "meta", "first_seen", "last_seen", "closed")}
    return TurnBuffer.model_validate({**fields, "turns": tuple(row["turns"])})


class BufferOps(StoreBase):
    async def append_turns(
        self,
        conversation_id: str,
        turns: Sequence[JsonValue],
        *,
        delta_key: str | None = None,
        meta: dict[str, JsonValue] | None = None,
    ) -> TurnBuffer:
        """Append turns to the conversation's open buffer (creating it); return the buffer.

        A delta whose ``delta_key`` was already appended changes nothing.
        """
        keys = [delta_key] if delta_key is not None else []
        async with self._pool.acquire() as conn:
            row = await conn.fetchrow(_APPEND, conversation_id, list(turns), keys, meta or {})
            if row is not None:
                return _buffer(row)
            row = await conn.fetchrow(
                f"SELECT {_COLS}, delta_keys FROM turn_buffers WHERE conversation_id = $1",
                conversation_id,
            )
        assert row is not None  # the upsert only skips an existing row
        duplicate = bool(keys) and keys[0] in row["delta_keys"]
        if row["closed"] and not duplicate:
            raise LateTurnError(f"conversation {conversation_id} is already closed")
        return _buffer(row)

    async def get_buffer(self, conversation_id: str) -> TurnBuffer | None:
        row = await self._pool.fetchrow(
            f"SELECT {_COLS} FROM turn_buffers WHERE conversation_id = $1", conversation_id
        )
        return None if row is None else _buffer(row)

    async def close_buffer(self, conversation_id: str) -> TurnBuffer | None:
        """Close the buffer (no more turns accepted); return it, or None if unknown."""
        row = await self._pool.fetchrow(
            "UPDATE turn_buffers SET closed = true, closed_at = coalesce(closed_at, now())"
            f" WHERE conversation_id = $1 RETURNING {_COLS}",
            conversation_id,
        )
        return None if row is None else _buffer(row)

    async def idle_buffers(self, idle_for: timedelta, *, limit: int = 1000) -> list[TurnBuffer]:
        """Open buffers with no delta for ``idle_for`` (by the database clock)."""
        rows = await self._pool.fetch(
            f"SELECT {_COLS} FROM turn_buffers WHERE NOT closed AND last_seen < now() - $1::interval"
            " ORDER BY last_seen LIMIT $2",
            idle_for,
            limit,
        )
        return [_buffer(r) for r in rows]

    async def open_buffers(self, *, limit: int = 10000) -> list[TurnBuffer]:
        rows = await self._pool.fetch(
            f"SELECT {_COLS} FROM turn_buffers WHERE NOT closed ORDER BY first_seen LIMIT $1",
            limit,
        )
        return [_buffer(r) for r in rows]

    async def purge_closed_buffers(self, older_than: timedelta) -> int:
        """Delete buffers closed longer ago than ``older_than``; return how many."""
        status = await self._pool.execute(
            "DELETE FROM turn_buffers WHERE closed AND closed_at < now() - $1::interval", older_than
        )
        return int(str(status).rsplit(" ", 1)[-1])
