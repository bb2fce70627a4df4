"""Guards judged on one-sided bounds, never on point estimates.

A guard holds only when the (one-sided, gate ``confidence``) upper bound of its regression
is within tolerance: the candidate has to show that it did not get worse, as it has to show
that it got better. Per guard:

- ``tool_error_rate`` (errors per sample that tried a call): Newcombe's hybrid score bound
  on the difference of two proportions, from Wilson limits
  (``scipy.stats.binomtest(...).proportion_ci``). Counts are taken per prompt (prompts that
  tried a call, times their error rate), so k samples of one prompt do not count as k
  independent calls.
- ``response_tokens``, ``safety``: the one-sided t bound of the mean paired per-prompt
  regression (``scipy.stats.ttest_1samp``); a relative rule divides by the baseline mean.

A guard the baseline lacks (a base model that never tries a tool call made no tool errors)
is judged on the candidate alone against an absolute limit: the best possible value (0 when
higher is worse, 1 when lower is worse: both are rates in [0, 1]) moved by the tolerance.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
from scipy import stats

from rlstream.evaluation.models import EvaluationReport, GuardRule, Sample


@dataclass(frozen=True)
class GuardCheck:
    """One guard's verdict: ``ok`` False rejects the candidate; ``reason`` says why."""

    name: str
    ok: bool
    reason: str


def _wilson(x: int, n: int, confidence: float) -> tuple[float, float]:
    """One-sided Wilson limits at ``confidence`` each (the two-sided 2c-1 interval)."""
    ci = stats.binomtest(x, n).proportion_ci(2 * confidence - 1, method="wilson")
    return float(ci.low), float(ci.high)


def _counts(per_prompt: Sequence[Sequence[Sample]]) -> tuple[int, int]:
    """(errors, calls) in prompt units: prompts that tried a call, times the error rate."""
    tried = [[s for s in samples if s.attempted_call] for samples in per_prompt]
    tried = [t for t in tried if t]
    calls = sum(len(t) for t in tried)
    if not calls:
        return 0, 0
    rate = sum(s.tool_error for t in tried for s in t) / calls
    return round(rate * len(tried)), len(tried)


def _rate_bound(
    rule: GuardRule, base: tuple[int, int], cand: tuple[int, int], confidence: float
) -> tuple[float, str]:
    """Upper bound of the regression of a per-call rate, and how it was bounded."""
    (xb, nb), (xc, nc) = base, cand
    lc, uc = _wilson(xc, nc, confidence)
    pc = xc / nc
    if rule.worse == "higher":
        if not nb:
            return uc, f"candidate alone: {xc}/{nc} prompts, Wilson bound {uc:.3f}"
        lb, ub = _wilson(xb, nb, confidence)
        pb = xb / nb
        bound = pc - pb + math.hypot(uc - pc, pb - lb)
    else:
        if not nb:
            return 1.0 - lc, f"candidate alone: {xc}/{nc} prompts, Wilson bound {lc:.3f}"
        lb, ub = _wilson(xb, nb, confidence)
        pb = xb / nb
        bound = pb - pc + math.hypot(ub - pb, pc - lc)
    how = f"{xb}/{nb} -> {xc}/{nc} prompts, Newcombe bound"
    if rule.relative:
        return (bound / pb if pb > 0 else (0.0 if bound <= 0 else math.inf)), how
    return bound, how


def _mean_bound(regression: np.ndarray, confidence: float) -> float:
    """One-sided upper t bound of the mean regression (its value when all are equal)."""
    if regression.size < 2:
        return math.inf  # one prompt bounds nothing
    if float(np.ptp(regression)) == 0.0:
        return float(regression[0])  # no spread: the t bound is undefined, the mean is exact
    ci = stats.ttest_1samp(regression, 0.0, alternative="less").confidence_interval(confidence)
    return float(ci.high) if math.isfinite(ci.high) else math.inf


def _per_prompt(samples: Sequence[Sample], name: str) -> float | None:
    if name == "response_tokens":
        return float(np.mean([s.tokens for s in samples]))
    vals = [s.safety for s in samples if s.safety is not None]
    return float(np.mean(vals)) if vals else None


def _paired_bound(
    report: EvaluationReport, name: str, rule: GuardRule, confidence: float
) -> tuple[float, str]:
    pairs = [
        (_per_prompt(p.baseline, name), _per_prompt(p.candidate, name)) for p in report.prompts
    ]
    base_vals = [b for b, _ in pairs if b is not None]
    cand_vals = np.array([c for _, c in pairs if c is not None])
    sign = 1.0 if rule.worse == "higher" else -1.0
    if not base_vals:
        ref = 0.0 if rule.worse == "higher" else 1.0
        bound = _mean_bound(sign * (cand_vals - ref), confidence)
        return bound, f"candidate alone over {cand_vals.size} prompts, t bound"
    both = np.array([(b, c) for b, c in pairs if b is not None and c is not None])
    reg = sign * (both[:, 1] - both[:, 0]) if both.size else np.array([])
    bound = _mean_bound(reg, confidence)
    how = f"paired over {len(reg)} prompts, t bound"
    if rule.relative:
        mb = float(np.mean(both[:, 0])) if both.size else 0.0
        bound = bound / mb if mb > 0 else (0.0 if bound <= 0 else math.inf)
    return bound, how


def judge_guard(
    report: EvaluationReport, name: str, rule: GuardRule, confidence: float
) -> GuardCheck | None:
    """The guard's check, or None when the candidate has no value (e.g. never tried a call,
    or no safety grading): nothing of it can have regressed."""
    base = report.baseline.guards.get(name)
    cand = report.candidate.guards.get(name)
    if cand is None:
        return None
    if base is None and rule.relative:
        return GuardCheck(name, False, f"guard {name}: the baseline has no value to be "
                          "relative to, so the regression cannot be bounded")  # fmt: skip
    level = f"{confidence:.0%}"
    if name == "tool_error_rate":
        bound, how = _rate_bound(
            rule,
            _counts([p.baseline for p in report.prompts]),
            _counts([p.candidate for p in report.prompts]),
            confidence,
        )
    elif name in ("response_tokens", "safety"):
        bound, how = _paired_bound(report, name, rule, confidence)
    else:  # a guard with no per-prompt data: its point estimate is all there is
        bound = rule.regressed(base, cand)[1] if base is not None else math.inf
        how = "point estimate (no per-prompt data)"
    unit = "relative" if rule.relative else "absolute"
    shown = f"{base:.3f}" if base is not None else "none"
    limit = "absolute limit" if base is None else "tolerance"
    figures = f"{shown} -> {cand:.3f}; {level} upper bound of the regression {bound:+.3f} {unit}"
    if bound > rule.tolerance:
        ref = 0.0 if rule.worse == "higher" else 1.0
        point = rule.regressed(ref if base is None else base, cand)[1]
        verdict = "regressed beyond" if point > rule.tolerance else "not shown within"
        return GuardCheck(
            name, False, f"guard {name} {verdict} {limit} {rule.tolerance:.3f}: {figures} ({how})"
        )
    return GuardCheck(name, True, f"guard {name} holds: {figures} ({how})")
