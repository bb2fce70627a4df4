"""RedisState: idempotency keys, O(1) counters, near-dup index, single-flight locks,
and the rebuild from Postgres after Redis lost everything."""

from __future__ import annotations

import asyncio

import pytest
from storage_helpers import make_rollout, make_transcript

from rlstream.storage import (
    GroupKey,
    LockBusyError,
    RedisState,
    Store,
    rebuild_from_postgres,
    simhash64,
)

pytestmark = pytest.mark.redis

SPEC = "outcome@1"


async def test_seen_claims_once_with_ttl(state: RedisState) -> None:
    key = state.idem_key("conversation", "c1")
    assert not await state.is_seen(key)
    assert await state.seen(key) is False
    assert await state.seen(key) is True
    assert 0 < await state.redis.ttl(key) <= state.ttl_s
    assert await state.mark_seen([key, state.idem_key("conversation", "c2")]) == 1
    assert await state.is_seen(state.idem_key("conversation", "c2"))


async def test_concurrent_claims_of_one_key_have_one_winner(state: RedisState) -> None:
    key = state.idem_key("conversation", "race")
    results = await asyncio.gather(*(state.seen(key) for _ in range(20)))
    assert results.count(False) == 1


async def test_bump_groups_counts_each_rollout_once(state: RedisState) -> None:
    rs = [
        make_rollout(make_transcript(f"c{i}", task_key=f"t{i % 2}"), passed=i < 3, score=0.25 * i)
        for i in range(5)
    ]
    after = await state.bump_groups(rs)
    assert [(s.key.task_key, s.n) for s in after] == [
        ("t0", 1), ("t1", 1), ("t0", 2), ("t1", 2), ("t0", 3)
    ]  # fmt: skip
    await state.bump_groups(rs[:3])  # redelivered
    t0 = await state.get_group(GroupKey(agent="support", reward_spec=SPEC, task_key="t0"))
    assert t0 is not None and (t0.n, t0.passes) == (3, 2)
    assert t0.sum_score == pytest.approx(0.0 + 0.5 + 1.0)
    groups = await state.groups("support", SPEC)
    assert [(g.key.task_key, g.n, g.passes) for g in groups] == [("t0", 3, 2), ("t1", 2, 1)]


async def test_bump_groups_chunks_large_batches_and_dedupes_within_one(
    state: RedisState,
) -> None:
    rs = [
        make_rollout(make_transcript(f"c{i}", task_key="big"), passed=i % 4 == 0)
        for i in range(1200)
    ]
    after = await state.bump_groups([*rs, rs[0], rs[700]])  # spans three script calls
    assert [s.n for s in after[:1200]] == list(range(1, 1201))
    assert after[-1].n == after[-2].n == 1200
    g = await state.get_group(GroupKey(agent="support", reward_spec=SPEC, task_key="big"))
    assert g is not None and (g.n, g.passes) == (1200, 300)


async def test_rebuild_after_redis_loss_restores_counters_and_idempotency(
    store: Store, state: RedisState
) -> None:
    rs = [
        make_rollout(make_transcript(f"c{i}", task_key=f"t{i % 3}"), passed=i % 2 == 0)
        for i in range(30)
    ]
    await store.save_rollouts(rs)
    await state.bump_groups(rs)
    before = await state.groups("support", SPEC)
    await state.redis.flushdb()  # Redis lost everything (this test's own database)
    assert await state.groups("support", SPEC) == []
    report = await rebuild_from_postgres(store, state)
    assert report.groups == 3 and report.rollout_markers == 30
    rebuilt = await state.groups("support", SPEC)
    assert rebuilt == before
    assert rebuilt == await store.group_stats("support", SPEC)
    await state.bump_groups(rs)  # redelivery after the rebuild counts nothing twice
    assert await state.groups("support", SPEC) == before
    assert await state.is_seen(state.idem_key("rollout", rs[0].rollout_id))
    assert await state.is_seen(state.idem_key("conversation", "c7"))


async def test_rebuild_restores_neardup_index_with_a_signer(
    store: Store, state: RedisState
) -> None:
    await store.save_transcripts([make_transcript("a", task_key="t"), make_transcript("b")])
    await state.redis.flushdb()
    report = await rebuild_from_postgres(
        store, state, signer=lambda t: (t.agent or "", simhash64(t.messages[0].text))
    )
    assert report.neardup_items == 2
    hits = await state.neardup.query("support", simhash64("question t"))
    assert hits[0] == ("a", 0)


async def test_neardup_index_finds_near_and_ignores_far(state: RedisState) -> None:
    base = simhash64("my order 1234 never arrived, can you check where it is please")
    near = simhash64("my order 1234 never arrived, can you check where it is please?!")
    far = simhash64("how do I reset the password on my account after the update")
    assert await state.neardup.add("s", "base", base) == []
    assert await state.neardup.add("s", "near", near) == [("base", 0)]
    assert await state.neardup.add("s", "far", far) == []
    flipped = base ^ 0b1001  # two bits away
    assert [i for i, _ in await state.neardup.query("s", flipped)] == ["base", "near"]
    assert await state.neardup.query("other-scope", base) == []
    top = (1 << 63) | (1 << 40)  # high-half bits and the sign bit of a 32-bit half
    await state.neardup.add("hi", "top", top)
    assert await state.neardup.query("hi", top ^ (1 << 63) ^ 1) == [("top", 2)]
    assert await state.neardup.query("hi", top ^ 0b111, max_distance=2) == []


async def test_concurrent_near_duplicates_never_miss_each_other(state: RedisState) -> None:
    sig = simhash64("please cancel my subscription before the next billing cycle")
    found = await asyncio.gather(*(state.neardup.add("race", f"i{k}", sig) for k in range(8)))
    assert sorted(len(f) for f in found) == list(range(8))  # each saw all earlier adds


async def test_single_flight_lock_is_exclusive(state: RedisState) -> None:
    got = await asyncio.gather(*(state.locks.try_acquire("release", 5000) for _ in range(10)))
    held = [g for g in got if g is not None]
    assert len(held) == 1
    with pytest.raises(LockBusyError):
        async with state.locks.hold("release", 5000):
            pass
    assert await held[0].release()
    async with state.locks.hold("release", 5000) as lock:
        assert await state.redis.get(lock.key) == lock.token.encode()
    assert await state.redis.get(lock.key) is None


async def test_expired_holder_cannot_release_or_extend_the_new_holder(state: RedisState) -> None:
    old = await state.locks.try_acquire("job", 50)
    assert old is not None
    await asyncio.sleep(0.1)
    new = await state.locks.try_acquire("job", 5000)
    assert new is not None
    assert not await old.release()
    assert not await old.extend(10_000)
    assert await state.redis.get(new.key) == new.token.encode()
    assert await new.extend(8000)
    assert 5000 < await state.redis.pttl(new.key) <= 8000
    waiter = asyncio.create_task(state.locks.try_acquire("job", 1000, wait_s=2.0))
    await asyncio.sleep(0.1)
    await new.release()
    assert await waiter is not None


async def test_renewed_lock_outlives_its_ttl(state: RedisState) -> None:
    async with state.locks.hold("long", 150, renew=True) as lock:
        await asyncio.sleep(0.5)  # > 3 TTLs
        assert await state.locks.try_acquire("long", 1000) is None
        assert not lock.lost
    assert await state.redis.get(lock.key) is None
    assert await state.ping()
