"""Held-out task keys in Postgres: the database itself refuses to train on them."""

from __future__ import annotations

import asyncpg
import pytest
from storage_helpers import make_rollout, make_transcript

from rlstream.storage import DatasetRecord, HeldoutReleaseError, Store

pytestmark = pytest.mark.postgres

SPEC = "outcome@1"


def _dataset(ds: str) -> DatasetRecord:
    return DatasetRecord(
        dataset_id=ds, agent="support", reward_spec=SPEC, manifest={"files": []}, path=f"/d/{ds}"
    )


async def _seed(store: Store) -> None:
    rs = [
        make_rollout(make_transcript(f"{k}-{i}", task_key=k), spec=SPEC)
        for k in ("train-a", "train-b", "held-x")
        for i in range(2)
    ]
    await store.save_rollouts(rs)


async def test_release_of_a_heldout_key_is_refused_and_nothing_is_marked(store: Store) -> None:
    await _seed(store)
    assert await store.hold_out("support", SPEC, ["held-x"], 0.1) == {"held-x"}
    rows = await store.pool.fetch("SELECT rollout_id, task_key FROM rollouts ORDER BY rollout_id")
    every = [str(r["rollout_id"]) for r in rows]
    with pytest.raises(HeldoutReleaseError, match="held-out task key held-x"):
        await store.release_dataset(_dataset("ds1"), every)
    # one transaction: neither the dataset nor any rollout was recorded
    assert await store.pool.fetchval("SELECT count(*) FROM datasets") == 0
    assert (
        await store.pool.fetchval("SELECT count(*) FROM rollouts WHERE released_in IS NOT NULL")
        == 0
    )
    train = [str(r["rollout_id"]) for r in rows if r["task_key"] != "held-x"]
    assert await store.release_dataset(_dataset("ds1"), train) == 4


async def test_a_hand_written_update_is_refused_too(store: Store) -> None:
    await _seed(store)
    await store.hold_out("support", SPEC, ["held-x"], 0.1)
    await store.save_dataset(_dataset("ds1"))
    with pytest.raises(asyncpg.CheckViolationError, match="held-out"):
        await store.pool.execute(
            "UPDATE rollouts SET released_in = 'ds1' WHERE task_key = 'held-x'"
        )


async def test_a_released_key_is_never_held_out_later(store: Store) -> None:
    await _seed(store)
    ids = [
        str(r[0])
        for r in await store.pool.fetch(
            "SELECT rollout_id FROM rollouts WHERE task_key = 'train-a'"
        )
    ]
    await store.release_dataset(_dataset("ds1"), ids)
    # the share grew and the hash now picks train-a: it was trained on, so it stays trainable
    assert await store.hold_out("support", SPEC, ["train-a", "held-x"], 0.5) == {"held-x"}
    assert await store.heldout_keys("support") == {"held-x"}
    with pytest.raises(asyncpg.CheckViolationError, match="already released"):
        await store.pool.execute(
            "INSERT INTO heldout_keys (agent, reward_spec, task_key, share)"
            " VALUES ('support', $1, 'train-a', 0.5)",
            SPEC,
        )
    # recorded once: holding out again is a no-op; other agents are separate
    assert await store.hold_out("support", SPEC, ["held-x"], 0.1) == {"held-x"}
    assert await store.heldout_keys(None) == set()


async def test_a_key_is_held_out_per_agent_under_every_reward_spec(store: Store) -> None:
    """A reward version bump must not re-draw the split: held out under v1 is held out under
    v2 (the trigger refuses its v2 rollouts too), and a key released under v1 cannot be
    held out under v2."""
    await _seed(store)
    await store.hold_out("support", SPEC, ["held-x"], 0.1)
    assert await store.heldout_keys("support", ["held-x", "train-a"]) == {"held-x"}
    v2 = "outcome@2"
    rs = await store.pool.fetch("SELECT rollout_id FROM rollouts WHERE task_key = 'train-a'")
    await store.release_dataset(_dataset("ds1"), [str(r[0]) for r in rs])
    # under v2 the share picks train-a: it trained a model of this agent, so it stays out
    assert await store.hold_out("support", v2, ["train-a", "held-x"], 0.5) == {"held-x"}
    with pytest.raises(asyncpg.CheckViolationError, match="already released"):
        await store.pool.execute(
            "INSERT INTO heldout_keys (agent, reward_spec, task_key, share)"
            " VALUES ('support', $1, 'train-a', 0.5)",
            v2,
        )
    await store.pool.execute(
        "UPDATE rollouts SET reward_spec = $1 WHERE task_key = 'held-x'",
        v2,
    )
    ids = [
        str(r[0])
        for r in await store.pool.fetch("SELECT rollout_id FROM rollouts WHERE task_key = 'held-x'")
    ]
    with pytest.raises(HeldoutReleaseError, match="held-out task key held-x"):
        await store.release_dataset(_dataset("ds2"), ids)
