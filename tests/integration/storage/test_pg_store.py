"""Store: idempotent batched writes, exact group counters, release-once, round trips."""

from __future__ import annotations

import asyncio

import asyncpg
import pytest
from storage_helpers import make_rollout, make_transcript

from rlstream.storage import (
    AlreadyReleasedError,
    DatasetRecord,
    GroupKey,
    Store,
    UnknownRecordError,
    UnredactedTranscriptError,
)

pytestmark = pytest.mark.postgres

SPEC = "outcome@1"


def _dataset(ds: str) -> DatasetRecord:
    return DatasetRecord(
        dataset_id=ds, agent="support", reward_spec=SPEC, manifest={"files": []}, path=f"/d/{ds}"
    )


async def _count(store: Store, table: str) -> int:
    return int(await store.pool.fetchval(f"SELECT count(*) FROM {table}"))


async def test_save_transcripts_returns_only_new_ids(store: Store) -> None:
    assert await store.ping()
    ts = [make_transcript(f"c{i}") for i in range(5)]
    assert sorted(await store.save_transcripts(ts)) == [f"c{i}" for i in range(5)]
    more = [*ts[3:], make_transcript("c9"), make_transcript("c9")]
    assert await store.save_transcripts(more) == ["c9"]
    assert await _count(store, "transcripts") == 6
    assert await store.get_transcript("c2") == ts[2]


async def test_unredacted_transcript_never_lands(store: Store) -> None:
    with pytest.raises(UnredactedTranscriptError):
        await store.save_transcripts(
            [make_transcript("ok"), make_transcript("pii", redacted=False)]
        )
    with pytest.raises(UnredactedTranscriptError):
        await store.save_rollouts([make_rollout(make_transcript("pii2", redacted=False))])
    assert await _count(store, "transcripts") == 0


async def test_redelivered_rollouts_change_nothing(store: Store) -> None:
    batch = [
        make_rollout(make_transcript(f"c{i}", task_key="t1"), score=0.9, passed=True)
        for i in range(3)
    ] + [make_rollout(make_transcript("c3", task_key="t1"), score=0.1, passed=False)]
    new = await store.save_rollouts(batch)
    assert sorted(new) == sorted(r.rollout_id for r in batch)
    # the same batch again, plus a duplicate inside the batch and one new rollout
    extra = make_rollout(make_transcript("c4", task_key="t2"), score=0.0, passed=False)
    again = await store.save_rollouts([*batch, batch[0], extra])
    assert again == [extra.rollout_id]
    assert await _count(store, "rollouts") == 5
    stats = {s.key.task_key: s for s in await store.group_stats("support", SPEC)}
    assert (stats["t1"].n, stats["t1"].passes) == (4, 3)
    assert stats["t1"].sum_score == pytest.approx(2.8)
    assert (stats["t2"].n, stats["t2"].passes) == (1, 0)


async def test_concurrent_overlapping_batches_count_each_rollout_once(store: Store) -> None:
    rollouts = [
        make_rollout(make_transcript(f"c{i}", task_key=f"t{i % 7}"), passed=i % 3 == 0)
        for i in range(300)
    ]
    batches = [rollouts[i : i + 120] for i in range(0, 300, 60)]  # every rollout in ~2 batches
    results = await asyncio.gather(*(store.save_rollouts(b) for b in batches * 2))
    new = [rid for r in results for rid in r]
    assert sorted(new) == sorted(r.rollout_id for r in rollouts)
    stats = await store.group_stats("support", SPEC)
    assert sum(s.n for s in stats) == 300
    assert sum(s.passes for s in stats) == sum(1 for r in rollouts if r.passed)


async def test_pending_rollouts_round_trip(store: Store) -> None:
    rollouts = [make_rollout(make_transcript(f"c{i}", task_key=f"t{i % 2}")) for i in range(4)]
    await store.save_rollouts(rollouts)
    pending = await store.pending_rollouts("support", SPEC)
    assert sorted(pending, key=lambda r: r.rollout_id) == sorted(
        rollouts, key=lambda r: r.rollout_id
    )
    only_t1 = await store.pending_rollouts("support", SPEC, task_keys=["t1"])
    assert {r.transcript.task_key for r in only_t1} == {"t1"}
    assert await store.pending_rollouts("other-agent", SPEC) == []
    assert len(await store.pending_rollouts("support", SPEC, limit=3)) == 3


async def test_release_is_once_and_all_or_nothing(store: Store) -> None:
    rs = [make_rollout(make_transcript(f"c{i}")) for i in range(4)]
    await store.save_rollouts(rs)
    ids = [r.rollout_id for r in rs]
    assert await store.release_dataset(_dataset("d1"), ids[:2]) == 2
    assert await store.mark_released("d1", ids[:2]) == 0  # a retry is a no-op
    await store.save_dataset(_dataset("d2"))
    with pytest.raises(AlreadyReleasedError) as err:
        await store.mark_released("d2", ids[1:])  # c1 is taken; c2, c3 are free
    assert err.value.rollout_ids == [ids[1]]
    assert await store.released_rollout_ids("d2") == []  # nothing was marked
    pending = {r.rollout_id for r in await store.pending_rollouts("support", SPEC)}
    assert pending == set(ids[2:])
    assert await store.mark_released("d2", ids[2:]) == 2
    assert (await store.get_dataset("d1")).n_rollouts == 2  # type: ignore[union-attr]
    with pytest.raises(UnknownRecordError):
        await store.mark_released("d2", ["nope"])
    with pytest.raises(UnknownRecordError):
        await store.mark_released("d404", ids[:1])


async def test_database_refuses_a_second_release_even_by_hand(store: Store) -> None:
    r = make_rollout(make_transcript("c0"))
    await store.save_rollouts([r])
    await store.release_dataset(_dataset("d1"), [r.rollout_id])
    await store.save_dataset(_dataset("d2"))
    with pytest.raises(asyncpg.UniqueViolationError, match="already released"):
        await store.pool.execute("UPDATE rollouts SET released_in = 'd2'")
    with pytest.raises(asyncpg.UniqueViolationError):
        await store.pool.execute("UPDATE rollouts SET released_in = NULL")


async def test_racing_releases_of_the_same_rollouts_one_wins(store: Store) -> None:
    rs = [make_rollout(make_transcript(f"c{i}")) for i in range(50)]
    await store.save_rollouts(rs)
    ids = [r.rollout_id for r in rs]
    outcomes = await asyncio.gather(
        *(store.release_dataset(_dataset(f"d{i}"), ids) for i in range(4)),
        return_exceptions=True,
    )
    wins = [o for o in outcomes if o == 50]
    assert len(wins) == 1
    assert all(isinstance(o, AlreadyReleasedError) for o in outcomes if o != 50)
    rows = await store.pool.fetch("SELECT DISTINCT released_in FROM rollouts")
    assert len(rows) == 1


async def test_group_stats_pending_only(store: Store) -> None:
    rs = [make_rollout(make_transcript(f"c{i}"), passed=i < 2) for i in range(4)]
    await store.save_rollouts(rs)
    await store.release_dataset(_dataset("d1"), [rs[0].rollout_id])
    (all_,) = await store.group_stats("support", SPEC)
    (pending,) = await store.group_stats("support", SPEC, pending_only=True)
    assert all_.key == GroupKey(agent="support", reward_spec=SPEC, task_key="task-a")
    assert (all_.n, all_.passes) == (4, 2)
    assert (pending.n, pending.passes) == (3, 1)


async def test_agentless_transcripts_group_under_empty_agent(store: Store) -> None:
    await store.save_rollouts([make_rollout(make_transcript("c0", agent=None))])
    assert len(await store.pending_rollouts(None, SPEC)) == 1
    (g,) = await store.group_stats(None, SPEC)
    assert g.key.agent == ""


async def test_a_bad_row_rolls_back_the_whole_batch_with_a_data_error(store: Store) -> None:
    good = [make_rollout(make_transcript(f"c{i}")) for i in range(3)]
    t = make_transcript("nul")
    bad = make_rollout(t.with_updates(task_key="has\x00nul"))
    with pytest.raises(asyncpg.DataError):  # class 22: the delivery layer dead-letters it
        await store.save_rollouts([*good, bad])
    assert await _count(store, "rollouts") == 0
    assert await _count(store, "transcripts") == 0
    assert await store.group_stats("support", SPEC) == []
    assert len(await store.save_rollouts(good)) == 3
