from __future__ import annotations

import pytest

from rlstream.services.curator.policy import pick_groups, pool_stats, should_release
from rlstream.services.curator.settings import CuratorSettings
from rlstream.storage import GroupKey, GroupStats

pytestmark = pytest.mark.unit


def g(task: str, n: int, passes: int) -> GroupStats:
    return GroupStats(
        key=GroupKey(agent="a", reward_spec="s", task_key=task),
        n=n,
        passes=passes,
        sum_score=float(passes),
    )


def test_pool_stats_gradient_support_follows_the_brief() -> None:
    # p = 0.5 -> 1.0, p = 0 -> 0, singleton ignored: mean 0.5
    s = pool_stats([g("t1", 4, 2), g("t2", 4, 0), g("t3", 1, 1)])
    assert (s.rollouts, s.groups, s.groups_multi, s.passes) == (9, 3, 2, 3)
    assert s.gradient_support == pytest.approx(0.5)
    assert pool_stats([]).gradient_support == 0.0


def test_should_release_needs_every_threshold() -> None:
    s = pool_stats([g(f"t{i}", 4, 2) for i in range(5)])
    assert should_release(s, min_rollouts=20, min_groups=5, min_support=0.3)
    assert not should_release(s, min_rollouts=21, min_groups=5, min_support=0.3)
    assert not should_release(s, min_rollouts=20, min_groups=6, min_support=0.3)
    flat = pool_stats([g(f"t{i}", 4, 4) for i in range(5)])
    assert not should_release(flat, min_rollouts=1, min_groups=1, min_support=0.05)


def test_per_agent_overrides(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("RLSTREAM_RELEASE_OVERRIDES", '{"big": {"min_rollouts": 5000}}')
    monkeypatch.setenv("RLSTREAM_RELEASE_MIN_GROUPS", "7")
    s = CuratorSettings()
    assert s.thresholds_for("big") == (5000, 7, 0.3)
    assert s.thresholds_for("other") == (200, 7, 0.3)


def test_pick_groups_reads_whole_groups_round_robin_under_the_cap() -> None:
    groups = [g(f"t{i}", 4, 2) for i in range(5)]  # t0..t4, 20 rollouts
    assert pick_groups(groups, None, 20) == (None, None)  # fits: read everything
    keys, cur = pick_groups(groups, None, 9)
    assert (keys, cur) == (["t0", "t1"], "t1")  # whole groups: 8 <= 9 < 12
    keys, cur = pick_groups(groups, cur, 9)
    assert (keys, cur) == (["t2", "t3"], "t3")
    keys, cur = pick_groups(groups, cur, 9)
    assert (keys, cur) == (["t4", "t0"], "t0")  # wraps: no group is starved
    big = [g("a", 50, 25), g("b", 4, 2)]
    assert pick_groups(big, None, 10) == (["a"], "a")  # one oversized group is taken whole
    assert pick_groups(big, "a", 10) == (["b"], "b")
