"""The gate: promote only on a paired gain the test proves over enough prompts, with no
regression that a one-sided bound cannot rule out."""

from __future__ import annotations

import pytest
from eval_helpers import report_from, sample

from rlstream.evaluation import GateConfig, GuardRule, decide
from rlstream.evaluation.stats import bootstrap_ci, gain_test


def _mixed(n: int, passes: int, attempted: bool = True) -> list[list]:
    return [[sample(i < passes, attempted=attempted)] for i in range(n)]


def test_a_model_no_better_than_the_baseline_is_rejected() -> None:
    same = _mixed(60, 20)
    d = decide(report_from(same, same))
    assert not d.promote and d.decision == "reject"
    assert "no gain over min_effect shown" in d.reasons[0] and "+0.000" in d.reasons[0]


def test_a_clear_paired_gain_is_promoted_with_its_reasons() -> None:
    d = decide(report_from(_mixed(60, 5), _mixed(60, 40)))
    assert d.promote and d.decision == "promote", d.reasons
    assert "exact McNemar" in d.reasons[0] and "clears min_effect" in d.reasons[0]
    assert any(r.startswith("guard tool_error_rate holds") for r in d.reasons)


@pytest.mark.parametrize("n", [1, 5, 29])
def test_too_few_prompts_never_promote_even_when_every_one_is_won(n: int) -> None:
    # the old gate promoted these: a degenerate bootstrap CI [1, 1] "cleared" min_effect.
    # No tool calls here, so no guard stands in the way: only the number of prompts does.
    rep = report_from(_mixed(n, 0, attempted=False), _mixed(n, n, attempted=False))
    d = decide(rep)
    assert d.decision == "insufficient" and not d.promote
    assert d.reasons[0].startswith(f"insufficient: {n} held-out prompts") and "30" in d.reasons[0]
    # the exact test alone: 1 won prompt is p = 0.5, 5 of 5 is p = 0.031
    assert decide(rep, GateConfig(min_prompts=n)).promote == (n >= 5)


def test_a_clear_large_gain_at_thirty_prompts_promotes() -> None:
    # 20 prompts won, 1 lost, the rest tied: McNemar p = 1e-5, at exactly min_prompts
    base = [[sample(i == 0, attempted=False)] for i in range(30)]
    cand = [[sample(1 <= i <= 20, attempted=False)] for i in range(30)]
    d = decide(report_from(base, cand))
    assert d.decision == "promote", d.reasons


def test_zero_tool_errors_over_thirty_calls_cannot_rule_out_a_five_point_rise() -> None:
    # 0/30 errors on both sides: the 95% bound of the rise is 0.083 > 0.05 (it takes 52 calls)
    base = [[sample(i == 0)] for i in range(30)]
    cand = [[sample(1 <= i <= 20)] for i in range(30)]
    d = decide(report_from(base, cand))
    assert d.decision == "reject"
    assert any(r.startswith("guard tool_error_rate not shown within tolerance") for r in d.reasons)
    base, cand = base * 2, cand * 2
    assert decide(report_from(base, cand)).promote


def test_min_effect_raises_the_bar() -> None:
    rep = report_from(_mixed(60, 5), _mixed(60, 12))
    assert decide(rep).promote
    assert decide(rep, GateConfig(min_effect=0.3)).decision == "reject"


def test_a_guard_regression_rejects_despite_a_gain() -> None:
    base = _mixed(60, 5)
    cand = [[sample(i < 40, tool_error=i % 4 == 0)] for i in range(60)]
    d = decide(report_from(base, cand))
    assert d.decision == "reject"
    assert any("guard tool_error_rate regressed beyond tolerance" in r for r in d.reasons)
    # with a looser tolerance the same report passes
    loose = GateConfig(guards={"tool_error_rate": GuardRule(worse="higher", tolerance=0.5)})
    assert decide(report_from(base, cand), loose).promote


def test_a_guard_the_baseline_lacks_is_judged_against_an_absolute_limit() -> None:
    # the base model never tries a call (no tool-error rate); the candidate errs on 10 of its
    # 60 calls (17%): the old gate skipped the guard and promoted
    base = [[sample(False, attempted=False)] for _ in range(60)]
    cand = [[sample(i < 40, tool_error=i >= 50)] for i in range(60)]
    d = decide(report_from(base, cand))
    assert d.decision == "reject", d.reasons
    assert any(
        r.startswith("guard tool_error_rate regressed beyond absolute limit 0.050")
        for r in d.reasons
    )
    # an error-free candidate over as many calls stays within the limit
    clean = [[sample(i < 40)] for i in range(60)]
    assert decide(report_from(base, clean)).promote


def test_a_guard_within_tolerance_on_the_point_estimate_but_not_the_bound_rejects() -> None:
    # 2 of 60 calls err (3%) against none: within 5% as a point estimate, not as a bound
    base = _mixed(60, 5)
    cand = [[sample(i < 40, tool_error=i in (50, 51))] for i in range(60)]
    d = decide(report_from(base, cand))
    assert d.decision == "reject"
    assert any(r.startswith("guard tool_error_rate not shown within tolerance") for r in d.reasons)


def test_longer_answers_beyond_the_relative_tolerance_regress() -> None:
    base = [[sample(i < 5, tokens=20)] for i in range(60)]
    cand = [[sample(i < 40, tokens=40)] for i in range(60)]
    d = decide(report_from(base, cand))
    assert d.decision == "reject"
    assert any("response_tokens regressed beyond tolerance" in r for r in d.reasons)


def test_ungraded_samples_fail_the_gate() -> None:
    base = _mixed(60, 2)
    cand = [[sample(i < 50).model_copy(update={"graded": i != 0})] for i in range(60)]
    d = decide(report_from(base, cand))
    assert d.decision == "reject" and any("could not be graded" in r for r in d.reasons)


def test_bootstrap_is_seeded_and_resamples_prompts() -> None:
    diffs = [1.0] * 20 + [0.0] * 40
    a, b = bootstrap_ci(diffs, seed=1), bootstrap_ci(diffs, seed=1)
    assert a == b and a[0] < 1 / 3 < a[1] and a[2] == "BCa"
    assert bootstrap_ci([0.0] * 10) == (0.0, 0.0, "degenerate")
    # k samples per prompt do not narrow the CI: the unit is the prompt
    per_prompt = report_from(_mixed(40, 0), [[sample(i < 20)] * 4 for i in range(40)], k=4)
    single = report_from(_mixed(40, 0), _mixed(40, 20))
    assert per_prompt.deltas["pass_at_1"].ci_low == single.deltas["pass_at_1"].ci_low


def test_the_gain_test_fits_the_outcomes() -> None:
    # one sample per prompt: exact McNemar on the discordant prompts (ties carry no evidence)
    p, name = gain_test([1, 1, 1, 1, 1, 0, 0], [0, 0, 0, 0, 0, 0, 0])
    assert name == "exact McNemar" and p == pytest.approx(0.5**5)
    # fractions of k samples: the sign-flip permutation test, exact at small n
    p, name = gain_test([0.75, 0.5, 1.0, 0.25], [0.25, 0.5, 0.5, 0.0])
    assert name == "paired sign-flip permutation (exact)" and p == pytest.approx(2 / 16)
    assert gain_test([], [])[0] == 1.0
    # min_effect shifts the candidate: a +0.2 gain does not clear 0.3
    assert gain_test([1.0] * 12 + [0.0] * 48, [0.0] * 60, margin=0.3)[0] > 0.5
    assert gain_test([1.0] * 40 + [0.0] * 20, [0.0] * 60, margin=0.3)[0] < 0.05
