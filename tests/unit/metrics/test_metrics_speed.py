"""Speed target: a profile (hack scan included) of 1M rollouts in under 30 s."""

from __future__ import annotations

import random
import time

import pytest

from rlstream.metrics import RolloutRow, profile_rows

pytestmark = [pytest.mark.unit, pytest.mark.slow]


def test_one_million_rollouts_under_30s() -> None:
    rng = random.Random(0)
    tools = ("tool:lookup", "tool:refund", "tool:cancel")
    rows = []
    for g in range(125_000):
        p = rng.random()
        for i in range(8):
            ok = rng.random() < p
            rows.append(
                RolloutRow(
                    f"r{g}-{i}",
                    f"t{g}",
                    1.0 if ok else 0.0,
                    ok,
                    {
                        "reply_length": rng.random() * 900,
                        "tool_calls": float(i % 4),
                        rng.choice(tools): 1.0,
                    },
                    rng.getrandbits(62),
                )
            )
    start = time.perf_counter()
    profile = profile_rows(rows)
    elapsed = time.perf_counter() - start
    assert profile.rollouts == 1_000_000 and profile.groups == 125_000
    assert profile.hack_scan is not None and profile.hack_scan.sampled
    assert elapsed < 30, f"profile of 1M rollouts took {elapsed:.1f}s"
