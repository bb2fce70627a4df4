"""The promotion gate: a real, paired improvement on held-out prompts, and no regression.

``decide`` recomputes the paired bootstrap CI from the report's per-prompt results at the
gate's own confidence, so a decision can be re-derived from a stored report alone.
"""

from __future__ import annotations

import math

from rlstream.evaluation.models import EvaluationReport, GateConfig, GateDecision
from rlstream.evaluation.stats import paired_delta


def decide(report: EvaluationReport, gate: GateConfig | None = None) -> GateDecision:
    """Promote iff the CI lower bound of the gain clears ``min_effect``, no guard regresses
    beyond its tolerance and (almost) every sample could be graded. Reasons say why."""
    g = gate or GateConfig()
    reasons: list[str] = []
    ok = True
    if not report.prompts:
        return GateDecision(promote=False, reasons=("no held-out prompts were evaluated",))
    d = paired_delta(report.prompts, g.metric, g.confidence, report.decoding.seed)
    level = f"{g.confidence:.0%}"
    if math.isfinite(d.ci_low) and d.ci_low > g.min_effect:
        reasons.append(
            f"{g.metric} gain {d.mean:+.3f}, {level} CI [{d.ci_low:+.3f}, {d.ci_high:+.3f}] "
            f"over {d.n_prompts} held-out prompts clears min_effect {g.min_effect:+.3f}"
        )
    else:
        ok = False
        reasons.append(
            f"{g.metric} gain {d.mean:+.3f}, {level} CI [{d.ci_low:+.3f}, {d.ci_high:+.3f}] "
            f"over {d.n_prompts} held-out prompts: the lower bound does not clear "
            f"min_effect {g.min_effect:+.3f}"
        )
    for name, rule in sorted(g.guards.items()):
        base = report.baseline.guards.get(name)
        cand = report.candidate.guards.get(name)
        if base is None or cand is None:
            if base is not None or cand is not None:
                missing = "baseline" if base is None else "candidate"
                reasons.append(f"guard {name} not compared: not measured for the {missing}")
            continue  # e.g. no safety component in the reward, or no tool call tried
        bad, change = rule.regressed(base, cand)
        unit = "relative" if rule.relative else "absolute"
        if bad:
            ok = False
            reasons.append(
                f"guard {name} regressed: {base:.3f} -> {cand:.3f} ({change:+.3f} {unit} "
                f"worse, tolerance {rule.tolerance:.3f})"
            )
        else:
            reasons.append(f"guard {name} holds: {base:.3f} -> {cand:.3f}")
    for s in (report.baseline, report.candidate):
        total = len(report.prompts) * s.samples_per_prompt
        if total and s.ungraded / total > g.max_ungraded_share:
            ok = False
            reasons.append(
                f"{s.ungraded} of {total} {s.label} samples could not be graded "
                "(an unavailable judge fails the gate)"
            )
    return GateDecision(promote=ok, reasons=tuple(reasons))
