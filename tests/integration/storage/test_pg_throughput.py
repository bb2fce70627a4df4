"""Batched insert throughput of Store.save_rollouts (run with -s to see the figure)."""

from __future__ import annotations

import time
from collections.abc import Callable

import pytest
from storage_helpers import make_rollout, make_transcript

from rlstream.storage import Store
from rlstream.transcript import Message

pytestmark = pytest.mark.postgres

N, BATCH = 5000, 500


async def test_batched_rollout_insert_throughput(
    store: Store, record_property: Callable[[str, object], None]
) -> None:
    filler = "lorem ipsum dolor sit amet " * 6
    rollouts = []
    for i in range(N):
        t = make_transcript(f"c{i}", task_key=f"t{i % 250}", offset=i)
        msgs = tuple(
            Message(role="user" if j % 2 == 0 else "assistant", content=f"{j} {filler}")
            for j in range(10)
        )
        rollouts.append(make_rollout(t.with_updates(messages=msgs), passed=i % 3 == 0))
    start = time.perf_counter()
    new = 0
    for i in range(0, N, BATCH):
        new += len(await store.save_rollouts(rollouts[i : i + BATCH]))
    rate = N / (time.perf_counter() - start)
    record_property("rollouts_per_s", round(rate))
    print(f"\nsave_rollouts: {rate:,.0f} rollouts/s ({N} rollouts, batches of {BATCH})")
    assert new == N
    stats = await store.group_stats("support", "outcome@1")
    assert len(stats) == 250 and sum(s.n for s in stats) == N
    assert rate > 200  # a floor far below the measured rate, so only a regression trips it
