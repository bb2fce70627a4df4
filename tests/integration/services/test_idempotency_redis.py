"""SeenKeys against the real Redis: the Lua check/mark use exactly RedisState's keys."""

from __future__ import annotations

import uuid

import pytest
from redis.asyncio import Redis

from rlstream.delivery.idempotency import SeenKeys
from rlstream.storage import RedisState

pytestmark = pytest.mark.redis


async def test_seen_and_mark_match_redis_state_keys(redis_url: str) -> None:
    state = RedisState(Redis.from_url(redis_url), namespace=f"t{uuid.uuid4().hex[:8]}", ttl_s=60)
    try:
        keys = SeenKeys(state, "transcript")
        ids = ["a", "", "b c", "ünï", "x" * 300]
        assert await keys.seen(ids) == [False] * 5
        await keys.mark(ids[:3])
        assert await keys.seen(ids) == [True, True, True, False, False]
        for i in ids[:3]:  # the same key RedisState reads, with the TTL set
            assert await state.redis.get(state.idem_key("transcript", i)) == b"1"
            assert 0 < await state.redis.ttl(state.idem_key("transcript", i)) <= 60
        # ids with the separator in them take the per-key path, same keys
        odd = ["line\nbreak", "a"]
        assert await keys.seen(odd) == [False, True]
        await keys.mark(odd)
        assert await keys.seen(odd) == [True, True]
        assert await state.redis.exists(state.idem_key("transcript", "line\nbreak")) == 1
    finally:
        await state.redis.aclose()
