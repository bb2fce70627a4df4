"""Group-level numbers of a profile, computed from per-group (n, passes) arrays.

Everything here is a function of each group's (n, c) pair, so work is done once per
*distinct* pair and weighted by how many groups share it: a million rollouts in 125k groups
of 8 is nine pairs. The bootstrap resamples groups through a multinomial over those
pairs, which is the same distribution as drawing groups with replacement.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np
import numpy.typing as npt

from rlstream.errors import ConfigError
from rlstream.metrics.models import (
    FLAT,
    MIN_MEDIAN_N,
    TRAINS,
    Bootstrap,
    Histogram,
    Interval,
    Method,
    Verdict,
)
from rlstream.metrics.passk import curves

IntArray = npt.NDArray[np.int64]
FloatArray = npt.NDArray[np.float64]

#: pass@k is reported for k up to max n, but never beyond this (bounded output size)
K_CAP = 1024
CI_LEVEL = 0.95
MIN_CI_GROUPS = 3


@dataclass(frozen=True)
class GroupSummary:
    groups: int
    graded_groups: int
    mixed_groups: int
    singletons: int
    all_pass_groups: int
    all_fail_groups: int
    median_group_size: float | None
    gradient_support: float | None
    gradient_support_unbiased: float | None
    pass_at_1: float | None
    pass_at_k: dict[str, float]
    #: how many groups each pass@k point averages (those with n >= k): the curve's later
    #: points rest on fewer, larger groups, so it can bend down
    pass_at_k_groups: dict[str, int]
    pass_hat_k: dict[str, float]
    headline_k: int | None
    headroom: float | None
    histogram: Histogram
    ci: Bootstrap | None


def _r(x: float | np.floating[Any]) -> float:
    """Round for output so tiny float noise never changes a manifest byte."""
    return round(float(x), 12)


def _pairs(n: IntArray, c: IntArray) -> tuple[IntArray, IntArray, IntArray]:
    base = int(n.max()) + 1
    uniq, counts = np.unique(n.astype(np.int64) * base + c, return_counts=True)
    return (uniq // base).astype(np.int64), (uniq % base).astype(np.int64), counts.astype(np.int64)


def summarise(
    n: IntArray,
    c: IntArray,
    *,
    k_max: int | None = None,
    seed: int = 0,
    resamples: int = 1000,
) -> GroupSummary:
    """Support, pass@k, pass^k, headroom, histogram and bootstrap CI for groups (n, c)."""
    if k_max is not None and k_max < 1:
        raise ConfigError(f"k_max must be at least 1, got {k_max}")
    graded = n >= 2
    gn, gc = n[graded], c[graded]
    mixed = (gc > 0) & (gc < gn)
    edges = tuple(round(i / 10, 1) for i in range(11))
    hist_counts = np.histogram(gc / gn, bins=10, range=(0.0, 1.0))[0] if gn.size else np.zeros(10)
    histogram = Histogram(edges=edges, counts=tuple(int(x) for x in hist_counts))
    pn, pc, pw = _pairs(n, c) if n.size else (n, c, n)
    top = min(int(n.max()) if n.size else 0, k_max if k_max is not None else K_CAP, K_CAP)
    at_sum, hat_sum, k_cnt = np.zeros(top), np.zeros(top), np.zeros(top)
    for pair_n, pair_c, w in zip(pn.tolist(), pc.tolist(), pw.tolist(), strict=True):
        at, hat = curves(pair_n, pair_c, top)
        at_sum[: at.size] += w * at
        hat_sum[: hat.size] += w * hat
        k_cnt[: at.size] += w
    pass_at = {str(k + 1): _r(at_sum[k] / k_cnt[k]) for k in range(top) if k_cnt[k] > 0}
    pass_hat = {str(k + 1): _r(hat_sum[k] / k_cnt[k]) for k in range(top) if k_cnt[k] > 0}
    at_groups = {str(k + 1): int(k_cnt[k]) for k in range(top) if k_cnt[k] > 0}
    headline = min(int(np.floor(np.median(gn))), top) if gn.size else None
    headroom = _headroom(pn, pc, pw, headline)
    support = support_u = None
    if gn.size:
        p = gc / gn
        support = _r(np.mean(p * (1 - p) / 0.25))
        support_u = _r(np.mean(gc * (gn - gc) / (gn * (gn - 1)) / 0.25))
    return GroupSummary(
        groups=int(n.size),
        graded_groups=int(gn.size),
        mixed_groups=int(mixed.sum()),
        singletons=int((n == 1).sum()),
        all_pass_groups=int((gc == gn).sum()),
        all_fail_groups=int((gc == 0).sum()),
        median_group_size=float(np.median(gn)) if gn.size else None,
        gradient_support=support,
        gradient_support_unbiased=support_u,
        pass_at_1=pass_at.get("1"),
        pass_at_k=pass_at,
        pass_at_k_groups=at_groups,
        pass_hat_k=pass_hat,
        headline_k=headline,
        headroom=headroom,
        histogram=histogram,
        ci=_bootstrap(pn, pc, pw, headline, seed=seed, resamples=resamples),
    )


def _per_pair(pn: IntArray, pc: IntArray, headline: int | None) -> dict[str, FloatArray]:
    """Per distinct (n, c) pair: each metric's per-group value (NaN where it is undefined)."""
    nf, cf = pn.astype(np.float64), pc.astype(np.float64)
    graded = pn >= 2
    with np.errstate(invalid="ignore", divide="ignore"):
        p = cf / nf
        s = np.where(graded, p * (1 - p) / 0.25, np.nan)
        su = np.where(graded, cf * (nf - cf) / (nf * (nf - 1)) / 0.25, np.nan)
    hr = np.full(pn.size, np.nan)
    if headline is not None and headline >= 1:
        for i, (a, b) in enumerate(zip(pn.tolist(), pc.tolist(), strict=True)):
            if a >= headline:
                hr[i] = float(curves(a, b, headline)[0][-1]) - b / a
    return {"gradient_support": s, "gradient_support_unbiased": su, "pass_at_1": p, "headroom": hr}


def _headroom(pn: IntArray, pc: IntArray, pw: IntArray, headline: int | None) -> float | None:
    """pass@k - pass@1 at the headline k, both over the same groups (those with n >= k)."""
    if headline is None:
        return None
    hr = _per_pair(pn, pc, headline)["headroom"]
    ok = ~np.isnan(hr)
    if not ok.any():
        return None
    return _r(float((hr[ok] * pw[ok]).sum() / pw[ok].sum()))


def _bootstrap(
    pn: IntArray, pc: IntArray, pw: IntArray, headline: int | None, *, seed: int, resamples: int
) -> Bootstrap | None:
    total = int(pw.sum())
    if total < MIN_CI_GROUPS or resamples <= 0:
        return None
    rng = np.random.default_rng(seed)
    draws = rng.multinomial(total, pw / total, size=resamples).astype(np.float64)
    lo_q, hi_q = 100 * (1 - CI_LEVEL) / 2, 100 * (1 + CI_LEVEL) / 2
    intervals: dict[str, Interval | None] = {}
    for name, values in _per_pair(pn, pc, headline).items():
        ok = ~np.isnan(values)
        if int(pw[ok].sum()) < MIN_CI_GROUPS:
            intervals[name] = None
            continue
        wsum = draws[:, ok].sum(axis=1)
        keep = wsum > 0
        stats = (draws[keep][:, ok] @ values[ok]) / wsum[keep]
        lo, hi = np.percentile(stats, [lo_q, hi_q])
        intervals[name] = Interval(low=_r(lo), high=_r(hi))
    return Bootstrap(level=CI_LEVEL, resamples=resamples, seed=seed, **intervals)


def verdict(support: float | None, median_n: float | None) -> Verdict:
    """trains >= 0.3, flat < 0.05, thin between; insufficient when groups are too small."""
    if support is None or median_n is None or median_n < MIN_MEDIAN_N:
        return "insufficient"
    if support >= TRAINS:
        return "trains"
    return "flat" if support < FLAT else "thin"


def recommend(v: Verdict, summary: GroupSummary, passes: int) -> tuple[Method, str]:
    """Pick the training method the data can feed, and say why."""
    s = summary.gradient_support
    mixed = summary.mixed_groups
    if v == "trains":
        return "grpo", (
            f"gradient support {s:.2f} >= {TRAINS}: {mixed} mixed groups give GRPO signal; "
            "train on their prompts + verifier labels (GRPO regenerates samples on-policy)"
        )
    if v == "thin" and mixed:
        return "dpo", (
            f"gradient support {s:.2f} is thin ({FLAT}-{TRAINS}): GRPO would spend most samples "
            f"on dead prompts; use pass/fail pairs from the {mixed} mixed groups directly"
        )
    if v == "insufficient" and mixed:
        mn = summary.median_group_size
        why = f"median group size {mn:g} < {MIN_MEDIAN_N}" if mn is not None else "no graded groups"
        return "dpo", (
            f"{why}: difficulty bands are not trustworthy, but {mixed} mixed groups "
            "yield pass/fail pairs"
        )
    if passes:
        return "sft", (
            f"verdict {v}: no usable within-group contrast; fine-tune on the {passes} "
            "passing conversations (assistant-only loss)"
        )
    return (
        "none",
        f"verdict {v} and no passing rollouts: nothing to train on; fix the agent or the reward",
    )
