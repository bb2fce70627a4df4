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
    assert await store.heldout_keys("support", SPEC) == {"held-x"}
    with pytest.raises(asyncpg.CheckViolationError, match="already released"):
        await store.pool.execute(
            "INSERT INTO heldout_keys (agent, reward_spec, task_key, share)"
            " VALUES ('support', $1, 'train-a', 0.5)",
            SPEC,
        )
    # recorded once: holding out again is a no-op, other agents and specs are separate
    assert await store.hold_out("support", SPEC, ["held-x"], 0.1) == {"held-x"}
    assert await store.heldout_keys("support", "other@1") == set()
    assert await store.heldout_keys(None, SPEC) == set()
