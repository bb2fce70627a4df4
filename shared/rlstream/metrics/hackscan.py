"""Reward-hack scan: does reward move with a surface feature *inside* groups?

GRPO baselines each group, so only within-group correlation says what the update will
reinforce; a pooled correlation mixes task difficulty with behaviour.
The noise floor is the 95th percentile of the max |rho| over within-group reward
shuffles, so with many features one large correlation by chance is not named as a hack.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from fnmatch import fnmatchcase

import numpy as np
import numpy.typing as npt

from rlstream.metrics.models import FeatureCorrelation, HackScan

POOLED_BACKUP = 0.3
#: a feature must be non-zero on at least this many scanned rows to be ranked
MIN_OBS = 20
MIN_MEDIAN_DISTINCT = 3
SHUFFLES = 100

IntArray = npt.NDArray[np.int64]
FloatArray = npt.NDArray[np.float64]


def is_endorsed(name: str, endorsed: Sequence[str]) -> bool:
    """Exact names or glob patterns (``tool:*``), as rewards declare them."""
    return any(fnmatchcase(name, pattern) for pattern in endorsed)


def _centre(values: FloatArray, gid: IntArray, counts: FloatArray) -> FloatArray:
    """Subtract each row's group mean (values: rows x cols, gid contiguous from 0)."""
    sums = np.stack(
        [
            np.bincount(gid, weights=values[:, j], minlength=counts.size)
            for j in range(values.shape[1])
        ],
        axis=1,
    )
    centred: FloatArray = values - (sums / counts[:, None])[gid]
    return centred


def _corr(xct: FloatArray, xnorm: FloatArray, rc: FloatArray) -> FloatArray:
    """Pearson rho of centred reward with each centred feature (xct: features x rows)."""
    rnorm = float(np.sqrt(rc @ rc))
    out: FloatArray = (xct @ rc) / (xnorm * rnorm)
    return out


def scan(
    gid: IntArray,
    scores: FloatArray,
    features: Sequence[Mapping[str, float]],
    distinct: FloatArray,
    *,
    endorsed: Sequence[str] = (),
    seed: int = 0,
    total_groups: int | None = None,
) -> HackScan:
    """Scan rows grouped by ``gid`` (0..G-1, rows sorted by gid, every group n >= 2).

    ``distinct`` is the number of distinct rollouts in each group (the guard refuses to
    name a hack when its median is below 3: too few distinct answers to correlate).
    """
    groups = int(distinct.size)
    sampled = total_groups is not None and total_groups > groups
    median_distinct = float(np.median(distinct)) if groups else 0.0
    base: dict[str, object] = {
        "scanned_groups": groups,
        "scanned_rollouts": int(gid.size),
        "sampled": sampled,
        "median_distinct": median_distinct,
        "shuffles": SHUFFLES,
        "seed": seed,
    }
    if groups == 0:
        return HackScan.model_validate(
            {**base, "floor": None, "refused": True, "refused_reason": "no graded groups"}
        )
    names = sorted({k for row in features for k in row})
    col = {name: j for j, name in enumerate(names)}
    x = np.zeros((gid.size, len(names)))
    for i, row in enumerate(features):
        for k, v in row.items():
            x[i, col[k]] = v
    counts = np.bincount(gid, minlength=groups).astype(np.float64)
    rc = _centre(scores[:, None], gid, counts)[:, 0]
    xc = _centre(x, gid, counts)
    xnorm = np.sqrt((xc * xc).sum(axis=0))
    # a feature seen on a handful of rows (a rare tool) correlates by chance and would
    # only raise the floor for everything else
    observed = np.count_nonzero(x, axis=0) >= min(MIN_OBS, gid.size)
    usable = (xnorm > 1e-12) & observed
    pooled = _pooled(x, scores)
    if float(rc @ rc) <= 1e-18 or not usable.any():
        reason = "no within-group " + ("reward" if float(rc @ rc) <= 1e-18 else "feature")
        return HackScan.model_validate(
            {
                **base,
                "floor": None,
                "refused": True,
                "refused_reason": reason + " variance",
                "pooled_flags": _pooled_flags(names, pooled),
                "warnings": _pooled_warnings(names, pooled),
            }
        )
    xct, xnorm = np.ascontiguousarray(xc[:, usable].T), xnorm[usable]
    used = [n for n, u in zip(names, usable, strict=True) if u]
    rho = _corr(xct, xnorm, rc)
    rng = np.random.default_rng(seed)
    maxes = np.empty(SHUFFLES)
    gidf = gid.astype(np.float64)
    for s in range(SHUFFLES):
        perm = np.argsort(gidf + rng.random(gid.size), kind="stable")
        maxes[s] = float(np.max(np.abs(_corr(xct, xnorm, rc[perm]))))
    floor = float(np.percentile(maxes, 95))
    sparse = tuple(n for n, o in zip(names, observed, strict=True) if not o)
    base["skipped_sparse"] = sparse
    return _verdict(base, used, rho, floor, names, pooled, tuple(endorsed), median_distinct)


def _pooled(x: FloatArray, scores: FloatArray) -> FloatArray:
    xc = x - x.mean(axis=0)
    rc = scores - scores.mean()
    denom = np.sqrt((xc * xc).sum(axis=0)) * float(np.sqrt(rc @ rc))
    with np.errstate(invalid="ignore", divide="ignore"):
        out: FloatArray = np.where(denom > 1e-12, (rc @ xc) / np.where(denom > 0, denom, 1), np.nan)
    return out


def _pooled_flags(names: list[str], pooled: FloatArray) -> tuple[str, ...]:
    return tuple(n for n, r in zip(names, pooled, strict=True) if abs(r) >= POOLED_BACKUP)


def _pooled_warnings(names: list[str], pooled: FloatArray) -> tuple[str, ...]:
    return tuple(
        f"pooled |rho|={abs(r):.2f} >= {POOLED_BACKUP} for {n} (check within groups)"
        for n, r in zip(names, pooled, strict=True)
        if abs(r) >= POOLED_BACKUP
    )


def _verdict(
    base: dict[str, object],
    used: list[str],
    rho: FloatArray,
    floor: float,
    names: list[str],
    pooled: FloatArray,
    endorsed: tuple[str, ...],
    median_distinct: float,
) -> HackScan:
    pooled_by = {
        n: (None if np.isnan(p) else round(float(p), 6)) for n, p in zip(names, pooled, strict=True)
    }
    rows = [
        FeatureCorrelation(
            name=n,
            within_rho=round(float(r), 6),
            pooled_rho=pooled_by[n],
            above_floor=bool(abs(r) > floor),
            endorsed=is_endorsed(n, endorsed),
        )
        for n, r in zip(used, rho, strict=True)
    ]
    rows.sort(key=lambda f: (-abs(f.within_rho), f.name))
    above = tuple(f.name for f in rows if f.above_floor)
    warnings = _pooled_warnings(names, pooled)
    common = {
        **base,
        "floor": round(floor, 6),
        "features": tuple(rows),
        "above_floor": above,
        "pooled_flags": _pooled_flags(names, pooled),
        "top_feature": rows[0].name if rows else None,
        "warnings": warnings,
    }
    if median_distinct < MIN_MEDIAN_DISTINCT:
        return HackScan.model_validate(
            {
                **common,
                "refused": True,
                "refused_reason": (
                    f"median distinct rollouts per group is {median_distinct:g} "
                    f"(< {MIN_MEDIAN_DISTINCT}): too few to name a hack"
                ),
            }
        )
    alarms: list[str] = []
    if rows and rows[0].above_floor and not rows[0].endorsed:
        top = rows[0]
        alarms.append(
            f"non-endorsed feature {top.name} ranks first (within rho={top.within_rho:+.2f}, "
            f"floor {floor:.2f})"
        )
    alarms.extend(
        f"endorsed feature {f.name} correlates negatively (within rho={f.within_rho:+.2f})"
        for f in rows
        if f.endorsed and f.above_floor and f.within_rho < 0
    )
    return HackScan.model_validate({**common, "alarm": bool(alarms), "alarms": tuple(alarms)})
