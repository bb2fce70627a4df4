"""The promotion gate: a proven paired gain on enough held-out prompts, and no regression.

``promote`` needs all of: at least ``min_prompts`` held-out prompts (below that the answer
is ``insufficient``: a handful of prompts cannot tell a gain from luck); the one-sided
paired test (:func:`rlstream.evaluation.stats.gain_test`) rejecting "gain <= min_effect" at
the gate's confidence; every guard's one-sided bound within tolerance
(:mod:`rlstream.evaluation.guards`); and (almost) every sample graded. Anything else is
``reject``. ``decide`` recomputes everything from the report's per-prompt results, so a
decision can be re-derived from a stored report alone; ``bench/gate_calibration.py``
measures its false-promotion rate and power.
"""

from __future__ import annotations

from rlstream.evaluation.guards import judge_guard
from rlstream.evaluation.models import Decision, EvaluationReport, GateConfig, GateDecision
from rlstream.evaluation.stats import paired_delta


def gain_decision(n_prompts: int, p_value: float, gate: GateConfig) -> Decision:
    """The gain test's part of the decision (what ``bench/gate_calibration.py`` simulates):
    too few prompts is ``insufficient`` whatever the test says."""
    if n_prompts < gate.min_prompts:
        return "insufficient"
    return "promote" if p_value < 1.0 - gate.confidence else "reject"


def decide(report: EvaluationReport, gate: GateConfig | None = None) -> GateDecision:
    """The gate's decision on ``report`` (promote | reject | insufficient) with its reasons;
    the first reason is the gain test's, or why there is too little to decide on."""
    g = gate or GateConfig()
    n = len(report.prompts)
    if n == 0:
        return GateDecision(
            decision="insufficient", reasons=("no held-out prompts were evaluated",)
        )
    d = paired_delta(report.prompts, g.metric, g.confidence, report.decoding.seed, g.min_effect)
    alpha = 1.0 - g.confidence
    p = d.p_value if d.p_value is not None else 1.0
    figures = (
        f"{g.metric} gain {d.mean:+.3f} over {n} held-out prompts ({d.wins} better, "
        f"{d.losses} worse); {d.test} one-sided p = {p:.2g} for gain <= {g.min_effect:+.3f}"
    )
    gain = gain_decision(n, p, g)
    ok = gain == "promote"
    reasons: list[str] = []
    if gain == "insufficient":
        reasons.append(
            f"insufficient: {n} held-out prompts, the gate needs at least {g.min_prompts} "
            f"(min_prompts) to tell a gain from luck; {figures}"
        )
    elif ok:
        reasons.append(f"{figures} (< {alpha:.2g}): the gain clears min_effect")
    else:
        reasons.append(f"{figures} (not < {alpha:.2g}): no gain over min_effect shown")
    for name, rule in sorted(g.guards.items()):
        check = judge_guard(report, name, rule, g.confidence)
        if check is None:
            if name in report.baseline.guards:
                reasons.append(f"guard {name} holds: not measured for the candidate")
            continue  # e.g. no safety component in the reward, or no tool call tried
        ok = ok and check.ok
        reasons.append(check.reason)
    for s in (report.baseline, report.candidate):
        total = n * s.samples_per_prompt
        if total and s.ungraded / total > g.max_ungraded_share:
            ok = False
            reasons.append(
                f"{s.ungraded} of {total} {s.label} samples could not be graded "
                "(an unavailable judge fails the gate)"
            )
    decision: Decision = (
        "insufficient" if gain == "insufficient" else ("promote" if ok else "reject")
    )
    return GateDecision(decision=decision, reasons=tuple(reasons))
