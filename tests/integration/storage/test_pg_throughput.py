"""Batched write throughput of Store.save_rollouts (run with -s to see the figures).

Three flows: fresh rollouts whose transcripts are new too (CLI over files), the grader's
flow (ingest stored the transcripts first), and a redelivered batch (nothing new).
"""

from __future__ import annotations

import time
from collections.abc import Callable

import pytest
from storage_helpers import make_rollout, make_transcript

from rlstream.rollout import ScoredRollout
from rlstream.storage import Store
from rlstream.transcript import Message

pytestmark = pytest.mark.postgres

N, BATCH = 5000, 500
FILLER = "lorem ipsum dolor sit amet " * 6


def _rollouts(prefix: str) -> list[ScoredRollout]:
    out = []
    for i in range(N):
        t = make_transcript(f"{prefix}{i}", task_key=f"t{i % 250}", offset=i)
        msgs = tuple(
            Message(role="user" if j % 2 == 0 else "assistant", content=f"{j} {FILLER}")
            for j in range(10)
        )
        out.append(make_rollout(t.with_updates(messages=msgs), passed=i % 3 == 0))
    return out


async def _rate(store: Store, rollouts: list[ScoredRollout]) -> tuple[float, int]:
    start = time.perf_counter()
    new = 0
    for i in range(0, N, BATCH):
        new += len(await store.save_rollouts(rollouts[i : i + BATCH]))
    return N / (time.perf_counter() - start), new


async def test_batched_rollout_insert_throughput(
    store: Store, record_property: Callable[[str, object], None]
) -> None:
    fresh, graded = _rollouts("f"), _rollouts("g")
    for i in range(0, N, BATCH):
        await store.save_transcripts([r.transcript for r in graded[i : i + BATCH]])
    fresh_rate, fresh_new = await _rate(store, fresh)
    grader_rate, grader_new = await _rate(store, graded)
    again_rate, again_new = await _rate(store, fresh)
    for name, rate in (("fresh", fresh_rate), ("grader", grader_rate), ("redelivered", again_rate)):
        record_property(f"{name}_rollouts_per_s", round(rate))
        print(f"\nsave_rollouts {name}: {rate:,.0f} rollouts/s ({N}, batches of {BATCH})", end="")
    assert (fresh_new, grader_new, again_new) == (N, N, 0)
    stats = await store.group_stats("support", "outcome@1")
    assert len(stats) == 250 and sum(s.n for s in stats) == 2 * N
    assert min(fresh_rate, grader_rate) > 200  # far below measured: only a regression trips it
