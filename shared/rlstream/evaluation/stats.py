"""Paired statistics over held-out prompts: pass@k per model, the gain test, a display CI.

The unit is the prompt, never the sample: k samples of one prompt are not independent
evidence ("Adding Error Bars to Evals", Miller 2024).

The gate decides on :func:`gain_test`, which stays valid at the small sample sizes a first
release holds out: with one sample per prompt (pass@1 in {0, 1}) it is the exact one-sided
McNemar test (``scipy.stats.binomtest`` on the discordant prompts); otherwise (pass@1 as a
fraction of k samples, mean reward) it is the paired sign-flip permutation test of the mean
difference (``scipy.stats.permutation_test``, exact up to 10 prompts, seeded Monte Carlo
with 1,999 flips above). Both are exact when candidate and baseline are the same model.
``min_effect`` enters as a shift: candidate values minus ``min_effect`` against the
baseline's (asymptotically valid; exact at the default 0). ``bench/gate_calibration.py``
measures its error rates.

The bootstrap CI (``scipy.stats.bootstrap``, BCa, seeded, percentile when BCa is undefined)
is kept for display only: at small n it is over-confident, and degenerate (``[m, m]``) when
every difference is equal.
"""

from __future__ import annotations

import warnings
from collections.abc import Sequence

import numpy as np
from scipy import stats

from rlstream.evaluation.models import Delta, Metric, PromptResult, Sample
from rlstream.metrics.passk import pass_at_k

N_RESAMPLES = 9999
#: random sign flips for the permutation test: exact enumeration up to 10 prompts
#: (2**10 <= this); above, p = (hits + 1) / (N_FLIPS + 1), valid at any count
N_FLIPS = 1999


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


def _mean(x: np.ndarray, axis: int = -1) -> np.ndarray:
    return np.mean(x, axis=axis)  # type: ignore[no-any-return]


def gain_test(
    candidate: Sequence[float] | np.ndarray,
    baseline: Sequence[float] | np.ndarray,
    margin: float = 0.0,
    seed: int = 0,
) -> tuple[float, str]:
    """(one-sided p of "mean(candidate - baseline) <= margin", the test's name) over paired
    per-prompt values in [0, 1]. Nothing to go on (no prompt) gives p = 1."""
    c = np.asarray(candidate, dtype=np.float64)
    b = np.asarray(baseline, dtype=np.float64)
    if c.size == 0:
        return 1.0, "none"
    binary = bool(np.isin(c, (0.0, 1.0)).all() and np.isin(b, (0.0, 1.0)).all())
    if binary and margin == 0.0:
        wins, losses = int(np.sum(c > b)), int(np.sum(c < b))
        if wins + losses == 0:
            return 1.0, "exact McNemar (no discordant prompt)"
        p = stats.binomtest(wins, wins + losses, 0.5, alternative="greater").pvalue
        return float(p), "exact McNemar"
    res = stats.permutation_test(  # one sample + "samples": the sign of each pair flips
        (c - b - margin,),
        _mean,
        permutation_type="samples",
        alternative="greater",
        n_resamples=N_FLIPS,
        vectorized=True,
        rng=np.random.default_rng(seed),
        batch=1000,
    )
    exact = 2**c.size <= N_FLIPS
    kind = "exact" if exact else f"{N_FLIPS:,} random flips"
    return float(res.pvalue), f"paired sign-flip permutation ({kind})"


def paired_delta(
    prompts: Sequence[PromptResult],
    metric: Metric,
    confidence: float = 0.95,
    seed: int = 0,
    margin: float = 0.0,
) -> Delta:
    """The paired gain on ``metric``: mean, display CI, and the gate's test at ``margin``."""
    f = PromptResult.rate if metric == "pass_at_1" else PromptResult.mean
    cand = [f(p.candidate) for p in prompts]
    base = [f(p.baseline) for p in prompts]
    diffs = [c - b for c, b in zip(cand, base, strict=True)]
    low, high, method = bootstrap_ci(diffs, confidence, seed)
    p, test = gain_test(cand, base, margin, seed)
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
        test=test,
        p_value=p,
        margin=margin,
    )
