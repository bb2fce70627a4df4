"""Paired statistics over held-out prompts: pass@k per model and a bootstrap CI of the gain.

The unit of resampling is the prompt, never the sample: k samples of one prompt are not
independent evidence ("Adding Error Bars to Evals", Miller 2024). The CI comes from
``scipy.stats.bootstrap`` (BCa, seeded), falling back to the percentile method when BCa is
undefined (e.g. when almost every difference is equal).
"""

from __future__ import annotations

import warnings
from collections.abc import Sequence

import numpy as np
from scipy import stats

from rlstream.evaluation.models import Delta, Metric, PromptResult, Sample
from rlstream.metrics.passk import pass_at_k

N_RESAMPLES = 9999


def pass_at_ks(per_prompt: Sequence[Sequence[Sample]]) -> dict[int, float]:
    """Mean unbiased pass@k over prompts, for k = 1..samples per prompt."""
    if not per_prompt:
        return {}
    n = min(len(s) for s in per_prompt)
    out: dict[int, float] = {}
    for k in range(1, n + 1):
        vals = [pass_at_k(len(s), sum(x.passed for x in s), k) for s in per_prompt]
        out[k] = float(np.mean(vals))
    return out


def bootstrap_ci(
    diffs: Sequence[float], confidence: float = 0.95, seed: int = 0
) -> tuple[float, float, str]:
    """(low, high, method) of the mean of ``diffs``, resampling prompts."""
    x = np.asarray(diffs, dtype=np.float64)
    if x.size == 0:
        return float("nan"), float("nan"), "none"
    if x.size == 1 or float(np.ptp(x)) == 0.0:
        m = float(x.mean())
        return m, m, "degenerate"  # every resample has the same mean
    for method in ("BCa", "percentile"):
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            res = stats.bootstrap(
                (x,),
                np.mean,
                confidence_level=confidence,
                n_resamples=N_RESAMPLES,
                method=method,
                rng=np.random.default_rng(seed),
            )
        low, high = float(res.confidence_interval.low), float(res.confidence_interval.high)
        if np.isfinite(low) and np.isfinite(high):
            return low, high, method
    return float("nan"), float("nan"), "failed"


def paired_delta(
    prompts: Sequence[PromptResult], metric: Metric, confidence: float = 0.95, seed: int = 0
) -> Delta:
    diffs = [p.diff(metric) for p in prompts]
    low, high, method = bootstrap_ci(diffs, confidence, seed)
    return Delta(
        metric=metric,
        mean=float(np.mean(diffs)) if diffs else float("nan"),
        ci_low=low,
        ci_high=high,
        confidence=confidence,
        n_prompts=len(diffs),
        wins=sum(d > 0 for d in diffs),
        losses=sum(d < 0 for d in diffs),
        ties=sum(d == 0 for d in diffs),
        method=method,
    )
