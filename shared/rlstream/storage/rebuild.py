"""Rebuild Redis from Postgres after Redis lost its data (or on demand).

Postgres holds every rollout and the authoritative group counters, so what must survive
Redis loss is re-derived from it: the counters, the per-rollout counter markers and the
"stored" idempotency keys (``idem_key("rollout" | "conversation", id)``) of ids still
inside the TTL window. Optionally the near-duplicate index, given a function that signs a
transcript.

Keys that mean "published to Kafka" (the services' ``scored`` / ``transcript`` kinds) are
deliberately *not* rebuilt: Postgres cannot tell a stored row from a published one, and
marking an unpublished row as published would drop that publish for good. Without them a
redelivery republishes, which consumers absorb by id.
"""

from __future__ import annotations

from collections.abc import Callable
from datetime import UTC, datetime, timedelta

from pydantic import BaseModel, ConfigDict

from rlstream.storage.redis_state import RedisState
from rlstream.storage.store import Store
from rlstream.transcript import Transcript

#: maps a transcript to (scope, signature) for the near-dup index, or None to skip it
Signer = Callable[[Transcript], tuple[str, int] | None]


class RebuildReport(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")

    groups: int
    rollout_markers: int
    idempotency_keys: int
    neardup_items: int


async def rebuild_from_postgres(
    store: Store, state: RedisState, *, signer: Signer | None = None
) -> RebuildReport:
    """Restore Redis state from Postgres. Run it under the ``rebuild-redis`` lock.

    Markers go in before counters, so a rollout redelivered mid-rebuild is not counted
    twice; a rollout committed between the counter read and the write may be missed by
    one until the next rebuild (writers can be paused for an exact result).
    """
    since = datetime.now(UTC) - timedelta(seconds=state.ttl_s)
    markers = idem = items = groups = 0
    async for ids in store.iter_ids("rollout", since=since):
        await state.mark_counted(ids)
        idem += await state.mark_seen([state.idem_key("rollout", i) for i in ids])
        markers += len(ids)
    async for ids in store.iter_ids("conversation", since=since):
        idem += await state.mark_seen([state.idem_key("conversation", i) for i in ids])
    await state.clear("grp*")
    async for batch in store.iter_group_stats():
        await state.set_groups(batch)
        groups += len(batch)
    if signer is not None:
        async for transcripts in store.iter_transcripts():
            for t in transcripts:
                signed = signer(t)
                if signed is not None:
                    await state.neardup.add(signed[0], t.conversation_id, signed[1])
                    items += 1
    return RebuildReport(
        groups=groups, rollout_markers=markers, idempotency_keys=idem, neardup_items=items
    )
