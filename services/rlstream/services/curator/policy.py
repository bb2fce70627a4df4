"""The release decision, from the pending pool's group counters (cheap, no rollouts read)."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from rlstream.metrics.profile import summarise
from rlstream.storage import GroupStats


@dataclass(frozen=True)
class PoolStats:
    rollouts: int
    groups: int
    groups_multi: int
    passes: int
    gradient_support: float
    gradient_support_unbiased: float | None


def pool_stats(groups: Sequence[GroupStats]) -> PoolStats:
    n = np.array([g.n for g in groups], dtype=np.int64)
    c = np.array([g.passes for g in groups], dtype=np.int64)
    s = summarise(n, c, resamples=0) if n.size else None
    return PoolStats(
        rollouts=int(n.sum()),
        groups=int(n.size),
        groups_multi=int((n >= 2).sum()),
        passes=int(c.sum()),
        gradient_support=float(s.gradient_support or 0.0) if s else 0.0,
        gradient_support_unbiased=s.gradient_support_unbiased if s else None,
    )


def should_release(
    stats: PoolStats, *, min_rollouts: int, min_groups: int, min_support: float
) -> bool:
    return (
        stats.rollouts >= min_rollouts
        and stats.groups_multi >= min_groups
        and stats.gradient_support >= min_support
    )


def pick_groups(
    groups: Sequence[GroupStats], after: str | None, cap: int
) -> tuple[list[str] | None, str | None]:
    """Whole pending groups, about ``cap`` rollouts, round-robin over task keys.

    Why: rollouts that curation drops (dead groups, near duplicates, out of band) stay
    pending, so reading the whole pool on every release grows the curator's memory and
    CPU with the stream's age. ``groups`` are sorted by task key; selection starts after
    ``after`` (the last key of the previous pick) and wraps, so no group is starved.
    Returns ``(None, None)`` when the whole pool fits (read it all), else the chosen task
    keys and the cursor for next time. A single group larger than ``cap`` is taken whole.
    """
    if sum(g.n for g in groups) <= cap:
        return None, None
    keys = [g.key.task_key for g in groups]
    start = next((i for i, k in enumerate(keys) if after is not None and k > after), 0)
    chosen: list[str] = []
    n = 0
    for i in range(len(groups)):
        g = groups[(start + i) % len(groups)]
        if chosen and n + g.n > cap:
            break
        chosen.append(g.key.task_key)
        n += g.n
    return chosen, chosen[-1]
