"""The gate: promote only on a paired gain whose CI clears min_effect, with no regression."""

from __future__ import annotations

from eval_helpers import report_from, sample

from rlstream.evaluation import GateConfig, GuardRule, decide
from rlstream.evaluation.stats import bootstrap_ci


def _mixed(n: int, passes: int) -> list[list]:
    return [[sample(i < passes)] for i in range(n)]


def test_a_model_no_better_than_the_baseline_is_rejected() -> None:
    same = _mixed(60, 20)
    d = decide(report_from(same, same))
    assert not d.promote and d.decision == "reject"
    assert "does not clear" in d.reasons[0] and "+0.000" in d.reasons[0]


def test_a_clear_paired_gain_is_promoted_with_its_reasons() -> None:
    d = decide(report_from(_mixed(60, 5), _mixed(60, 40)))
    assert d.promote, d.reasons
    assert "clears min_effect" in d.reasons[0]
    assert any(r.startswith("guard tool_error_rate holds") for r in d.reasons)


def test_min_effect_raises_the_bar() -> None:
    rep = report_from(_mixed(60, 5), _mixed(60, 12))
    assert decide(rep).promote
    assert not decide(rep, GateConfig(min_effect=0.3)).promote


def test_a_guard_regression_rejects_despite_a_gain() -> None:
    base = _mixed(60, 5)
    cand = [[sample(i < 40, tool_error=i % 4 == 0)] for i in range(60)]
    d = decide(report_from(base, cand))
    assert not d.promote
    assert any("guard tool_error_rate regressed" in r for r in d.reasons)
    # with a looser tolerance the same report passes
    loose = GateConfig(guards={"tool_error_rate": GuardRule(worse="higher", tolerance=0.5)})
    assert decide(report_from(base, cand), loose).promote


def test_tool_errors_compare_only_when_both_models_call_tools() -> None:
    # the base model never tries a call, so it makes no tool errors: not a bar to clear
    base = [[sample(False, attempted=False)] for _ in range(60)]
    cand = [[sample(i < 40, tool_error=i >= 50)] for i in range(60)]
    d = decide(report_from(base, cand))
    assert d.promote, d.reasons
    assert "guard tool_error_rate not compared: not measured for the baseline" in d.reasons


def test_longer_answers_beyond_the_relative_tolerance_regress() -> None:
    base = [[sample(i < 5, tokens=20)] for i in range(60)]
    cand = [[sample(i < 40, tokens=40)] for i in range(60)]
    d = decide(report_from(base, cand))
    assert not d.promote and any("response_tokens regressed" in r for r in d.reasons)


def test_ungraded_samples_fail_the_gate() -> None:
    base = _mixed(30, 2)
    cand = [[sample(i < 25).model_copy(update={"graded": i != 0})] for i in range(30)]
    d = decide(report_from(base, cand))
    assert not d.promote and any("could not be graded" in r for r in d.reasons)


def test_bootstrap_is_seeded_and_resamples_prompts() -> None:
    diffs = [1.0] * 20 + [0.0] * 40
    a, b = bootstrap_ci(diffs, seed=1), bootstrap_ci(diffs, seed=1)
    assert a == b and a[0] < 1 / 3 < a[1] and a[2] == "BCa"
    assert bootstrap_ci([0.0] * 10) == (0.0, 0.0, "degenerate")
    # k samples per prompt do not narrow the CI: the unit is the prompt
    per_prompt = report_from(_mixed(40, 0), [[sample(i < 20)] * 4 for i in range(40)], k=4)
    single = report_from(_mixed(40, 0), _mixed(40, 20))
    assert per_prompt.deltas["pass_at_1"].ci_low == single.deltas["pass_at_1"].ci_low
