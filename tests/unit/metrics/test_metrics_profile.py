"""Profiles: hand-computed fixtures, bounds, order invariance, verdict and method."""

from __future__ import annotations

import itertools
import random

import orjson
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from rich.console import Console

from rlstream.metrics import ProfileAccumulator, RolloutRow, profile_rows, render_profile
from rlstream.metrics.profile import verdict

pytestmark = pytest.mark.unit


def rows_for(groups: list[tuple[int, int]], *, prefix: str = "t") -> list[RolloutRow]:
    """Rows for groups given as (n, passes); features vary so the hack scan has work."""
    rows = []
    for g, (n, c) in enumerate(groups):
        for i in range(n):
            passed = i < c
            rows.append(
                RolloutRow(
                    rollout_id=f"{prefix}{g}-r{i}",
                    task_key=f"{prefix}{g:04d}",
                    score=1.0 if passed else 0.0,
                    passed=passed,
                    features={
                        "reply_length": float((g * 7 + i * 13) % 17),
                        "tool_calls": float(i % 3),
                    },
                    digest=g * 1000 + i,
                )
            )
    return rows


groups_st = st.lists(
    st.integers(1, 8).flatmap(lambda n: st.tuples(st.just(n), st.integers(0, n))),
    min_size=1,
    max_size=25,
)


def test_tau_bench_like_fixture_by_hand() -> None:
    # four tasks x four trials with 0, 1, 2, 4 passes, plus one passing singleton
    p = profile_rows(rows_for([(4, 0), (4, 1), (4, 2), (4, 4), (1, 1)]), hack_scan=False)
    assert (p.rollouts, p.groups, p.graded_groups, p.mixed_groups, p.singletons) == (17, 5, 4, 2, 1)
    assert (p.all_pass_groups, p.all_fail_groups) == (1, 1)
    # support: (0 + .75 + 1 + 0)/4; the singleton is not a zero
    assert p.gradient_support == pytest.approx(0.4375)
    assert p.gradient_support_unbiased == pytest.approx((1.0 + 4 / 3) / 4)
    assert p.pass_at_1 == pytest.approx((0 + 0.25 + 0.5 + 1 + 1) / 5)
    assert p.pass_at_k["2"] == pytest.approx((0 + 0.5 + 5 / 6 + 1) / 4)
    assert p.pass_at_k["4"] == pytest.approx(0.75)
    assert p.pass_hat_k["2"] == pytest.approx((1 / 6 + 1) / 4)
    assert p.pass_hat_k["4"] == pytest.approx(0.25)
    assert p.headline_k == 4
    # headroom over the same groups (n >= 4): 0.75 - 0.4375
    assert p.headroom == pytest.approx(0.3125)
    assert p.mean_reward == pytest.approx(8 / 17)
    assert p.verdict == "trains" and p.method == "grpo"
    assert p.histogram.counts == (1, 0, 1, 0, 0, 1, 0, 0, 0, 1)
    d = p.to_json_dict()
    for key in (
        "rollouts", "groups", "graded_groups", "mixed_groups", "singletons", "gradient_support",
        "gradient_support_unbiased", "pass_at_1", "pass_at_k", "pass_hat_k", "headroom",
        "verdict", "method", "mean_reward", "histogram", "hack_scan", "ci",
    ):  # fmt: skip
        assert key in d
    assert set(d["pass_at_k"]) == {"1", "2", "3", "4"}
    orjson.dumps(d)  # plain JSON types only


def test_tau_bench_reference_support() -> None:
    # 50 tasks x 4 trials, 26 mixed -> support 0.44, unbiased 0.59.
    # the split that gives it: 16 groups at 1/4 or 3/4, 10 at 2/4, 24 unanimous
    groups = [(4, 1)] * 8 + [(4, 3)] * 8 + [(4, 2)] * 10 + [(4, 0)] * 14 + [(4, 4)] * 10
    p = profile_rows(rows_for(groups), hack_scan=False)
    assert p.mixed_groups == 26
    assert p.gradient_support == pytest.approx(0.44)
    assert p.gradient_support_unbiased is not None
    assert round(p.gradient_support_unbiased, 2) == 0.59


def test_k_max_limits_reported_k() -> None:
    p = profile_rows(rows_for([(8, 3)] * 4), k_max=3, hack_scan=False)
    assert set(p.pass_at_k) == {"1", "2", "3"}


@settings(max_examples=60, deadline=None)
@given(groups_st)
def test_bounds(groups: list[tuple[int, int]]) -> None:
    p = profile_rows(rows_for(groups), hack_scan=False, resamples=50)
    graded = [(n, c) for n, c in groups if n >= 2]
    if graded:
        assert p.gradient_support is not None and 0.0 <= p.gradient_support <= 1.0
        assert p.gradient_support_unbiased is not None
        assert 0.0 <= p.gradient_support_unbiased <= 2.0
        assert p.gradient_support_unbiased >= p.gradient_support - 1e-12
    else:
        assert p.gradient_support is None and p.verdict == "insufficient"
    assert p.singletons == sum(1 for n, _ in groups if n == 1)
    assert sum(p.histogram.counts) == p.graded_groups == len(graded)
    for v in [*p.pass_at_k.values(), *p.pass_hat_k.values()]:
        assert 0.0 <= v <= 1.0
    if p.ci and p.ci.gradient_support:
        assert p.ci.gradient_support.low <= p.ci.gradient_support.high


@settings(max_examples=40, deadline=None)
@given(
    st.integers(2, 8).flatmap(
        lambda n: st.lists(st.integers(0, n).map(lambda c: (n, c)), min_size=1, max_size=15)
    )
)
def test_pass_at_k_monotone_for_equal_sizes(groups: list[tuple[int, int]]) -> None:
    p = profile_rows(rows_for(groups), hack_scan=False, resamples=0)
    ks = sorted(p.pass_at_k, key=int)
    at = [p.pass_at_k[k] for k in ks]
    hat = [p.pass_hat_k[k] for k in ks]
    assert all(b >= a - 1e-12 for a, b in itertools.pairwise(at))
    assert all(b <= a + 1e-12 for a, b in itertools.pairwise(hat))


@settings(max_examples=25, deadline=None)
@given(groups_st, st.randoms(use_true_random=False))
def test_order_invariance(groups: list[tuple[int, int]], rnd: random.Random) -> None:
    rows = rows_for(groups)
    shuffled = rows[:]
    rnd.shuffle(shuffled)
    a = profile_rows(rows, resamples=100).to_json_dict()
    b = profile_rows(shuffled, resamples=100).to_json_dict()
    assert orjson.dumps(a, option=orjson.OPT_SORT_KEYS) == orjson.dumps(
        b, option=orjson.OPT_SORT_KEYS
    )


@given(st.integers(2, 30).flatmap(lambda n: st.tuples(st.just(n), st.integers(0, n))))
def test_single_group_unbiased(g: tuple[int, int]) -> None:
    n, _c = g
    p = profile_rows(rows_for([g]), hack_scan=False, resamples=0)
    assert p.gradient_support_unbiased == pytest.approx(p.gradient_support * n / (n - 1))


def test_verdicts_and_methods() -> None:
    assert verdict(0.3, 4) == "trains"
    assert verdict(0.29, 8) == "thin"
    assert verdict(0.049, 8) == "flat"
    assert verdict(0.9, 3.5) == "insufficient"
    assert verdict(None, None) == "insufficient"
    flat = profile_rows(rows_for([(8, 8)] * 5 + [(8, 0)] * 5), hack_scan=False)
    assert (flat.verdict, flat.method) == ("flat", "sft")
    dead = profile_rows(rows_for([(8, 0)] * 5), hack_scan=False)
    assert (dead.verdict, dead.method) == ("flat", "none")
    thin = profile_rows(rows_for([(8, 4)] * 1 + [(8, 0)] * 9), hack_scan=False)
    assert thin.verdict == "thin" and thin.method == "dpo"
    small = profile_rows(rows_for([(2, 1)] * 10), hack_scan=False)
    assert small.verdict == "insufficient" and small.method == "dpo"
    assert "median group size 2" in small.method_reason


def test_ci_over_groups_seeded_and_absent_under_three() -> None:
    assert profile_rows(rows_for([(4, 1), (4, 2)]), hack_scan=False).ci is None
    rows = rows_for([(4, 1), (4, 2), (4, 0), (4, 4), (4, 3)] * 4)
    a = profile_rows(rows, hack_scan=False, seed=1).ci
    b = profile_rows(rows, hack_scan=False, seed=1).ci
    c = profile_rows(rows, hack_scan=False, seed=2).ci
    assert a == b and a is not None and a.gradient_support is not None
    assert a != c
    assert a.gradient_support.low < 0.55 < a.gradient_support.high  # true value 0.55


def test_accumulator_group_counters() -> None:
    acc = ProfileAccumulator()
    for row in rows_for([(3, 1), (2, 2)]):
        acc.add(row)
    g = acc.group("t0000")
    assert g is not None and (g.n, g.passes, g.mixed) == (3, 1, True)
    assert g.pass_rate == pytest.approx(1 / 3)
    assert acc.group("nope") is None
    assert [x.task_key for x in acc.groups()] == ["t0000", "t0001"]
    assert len(acc) == 5
    # profile twice, add more, profile again: the accumulator keeps counting
    assert acc.profile().rollouts == 5  # with the hack scan (numpy views of the arrays)
    acc.add(rows_for([(1, 0)], prefix="u")[0])
    assert acc.profile().singletons == 1


def test_render_profile_mentions_the_numbers() -> None:
    p = profile_rows(rows_for([(4, 0), (4, 1), (4, 2), (4, 4)] * 3))
    console = Console(width=120, record=True)
    console.print(render_profile(p))
    text = console.export_text()
    assert "gradient support" in text and "0.438" in text
    assert "0.0-0.1" in text and "trains" in text
    assert "Hack scan" in text


def test_empty_and_singleton_only_inputs() -> None:
    empty = profile_rows([])
    assert (empty.rollouts, empty.verdict, empty.method) == (0, "insufficient", "none")
    assert empty.pass_at_k == {} and empty.ci is None and empty.mean_reward is None
    assert empty.hack_scan is not None and empty.hack_scan.refused
    solo = profile_rows(rows_for([(1, 1), (1, 0)]))
    assert solo.singletons == 2 and solo.graded_groups == 0
    assert solo.gradient_support is None and solo.pass_at_1 == 0.5
    assert solo.verdict == "insufficient" and solo.method == "sft"
