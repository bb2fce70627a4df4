"""ProfileAccumulator: O(1) per rollout, a full Profile on demand.

The streaming curator keeps one per agent: ``add`` updates the group's counters and appends
a few numbers to flat arrays; ``profile`` does the heavy lifting with numpy. Groups are
processed in task-key order and rows in rollout-id order, so the result does not depend on
arrival order.
"""

from __future__ import annotations

import math
from array import array
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, fields

import numpy as np

from rlstream.metrics.hackscan import scan
from rlstream.metrics.models import HackScan, Profile
from rlstream.metrics.profile import recommend, summarise, verdict
from rlstream.metrics.rows import RolloutRow
from rlstream.rollout import ScoredRollout

#: the hack scan looks at a seeded sample of at most this many graded groups
SCAN_MAX_GROUPS = 20_000
_NO_DIGEST = 1 << 62


@dataclass(frozen=True, slots=True)
class GroupCounts:
    """A group's running counters: what the curator needs to decide readiness."""

    task_key: str
    n: int
    passes: int

    @property
    def pass_rate(self) -> float:
        return self.passes / self.n if self.n else 0.0

    @property
    def mixed(self) -> bool:
        return 0 < self.passes < self.n


class ProfileAccumulator:
    """Collects rows; ``profile()`` can be called any number of times."""

    def __init__(self, *, keep_features: bool = True) -> None:
        self._index: dict[str, int] = {}
        self._keys: list[str] = []
        self._n: list[int] = []
        self._c: list[int] = []
        self._gid = array("q")
        self._score = array("d")
        self._digest = array("q")
        self._ids: list[str] = []
        self._features: list[Mapping[str, float]] = []
        self._keep = keep_features
        self._passes = 0
        self._policies: dict[str, set[str]] = {}
        self._all_policies: set[str] = set()

    def add(self, row: RolloutRow) -> None:
        """Count one rollout: a dict lookup and a few appends (see :meth:`group`)."""
        key = row.task_key
        if row.policy is not None:  # one group per (task, policy): never pool two models
            key = f"{key} @ {row.policy}"
            seen = self._policies.setdefault(row.task_key, set())
            if row.policy not in seen:
                seen.add(row.policy)
                self._all_policies.add(row.policy)
        gid = self._index.get(key)
        if gid is None:
            gid = self._index[key] = len(self._keys)
            self._keys.append(key)
            self._n.append(0)
            self._c.append(0)
        self._n[gid] += 1
        if row.passed:
            self._c[gid] += 1
            self._passes += 1
        ids = self._ids
        self._gid.append(gid)
        self._score.append(row.score)
        self._digest.append(_NO_DIGEST + len(ids) if row.digest is None else row.digest)
        ids.append(row.rollout_id)
        if self._keep:
            self._features.append(row.features)

    def extend(self, rows: Iterable[RolloutRow]) -> None:
        for row in rows:
            self.add(row)

    def __len__(self) -> int:
        return len(self._ids)

    def group(self, task_key: str) -> GroupCounts | None:
        gid = self._index.get(task_key)
        return None if gid is None else GroupCounts(task_key, self._n[gid], self._c[gid])

    def groups(self) -> list[GroupCounts]:
        return [self.group(k) for k in sorted(self._keys)]  # type: ignore[misc]

    def profile(
        self,
        *,
        k_max: int | None = None,
        hack_scan: bool = True,
        endorsed: Sequence[str] = (),
        seed: int = 0,
        resamples: int = 1000,
        scan_max_groups: int = SCAN_MAX_GROUPS,
    ) -> Profile:
        """Compute the full profile of everything added so far."""
        order = np.array(sorted(range(len(self._keys)), key=self._keys.__getitem__), dtype=np.int64)
        n = np.asarray(self._n, dtype=np.int64)[order]
        c = np.asarray(self._c, dtype=np.int64)[order]
        summary = summarise(n, c, k_max=k_max, seed=seed, resamples=resamples)
        v = verdict(summary.gradient_support, summary.median_group_size)
        method, reason = recommend(v, summary, self._passes)
        scan_result = None
        if hack_scan and self._keep:
            scan_result = self._scan(order, endorsed, seed, scan_max_groups)
        rows = len(self._ids)
        return Profile(
            # every GroupSummary field is a Profile field of the same name and meaning
            **{f.name: getattr(summary, f.name) for f in fields(summary)},
            rollouts=rows,
            mean_reward=round(math.fsum(self._score) / rows, 12) if rows else None,
            pass_rate=round(self._passes / rows, 12) if rows else None,
            verdict=v,
            method=method,
            method_reason=reason,
            hack_scan=scan_result,
            policies=len(self._all_policies),
            mixed_policy_tasks=sum(1 for p in self._policies.values() if len(p) > 1),
        )

    def _scan(
        self, order: np.ndarray, endorsed: Sequence[str], seed: int, max_groups: int
    ) -> HackScan:
        n_by_gid = np.asarray(self._n, dtype=np.int64)
        graded = order[n_by_gid[order] >= 2]  # original gids, in task-key order
        total = int(graded.size)
        if total > max_groups:
            pick = np.sort(np.random.default_rng(seed).choice(total, max_groups, replace=False))
            graded = graded[pick]
        rank = np.full(len(self._keys), -1, dtype=np.int64)
        rank[graded] = np.arange(graded.size)
        row_gid = np.frombuffer(self._gid, dtype=np.int64)
        row_rank = rank[row_gid]
        rows = np.flatnonzero(row_rank >= 0)
        ids = self._ids
        rows = np.array(
            sorted(rows.tolist(), key=lambda i: (int(row_rank[i]), ids[i])), dtype=np.int64
        )
        gid = row_rank[rows]
        digests = np.frombuffer(self._digest, dtype=np.int64)[rows]
        pairs = np.unique(np.stack([gid, digests], axis=1), axis=0)
        distinct = np.bincount(pairs[:, 0], minlength=graded.size).astype(np.float64)
        scores = np.frombuffer(self._score, dtype=np.float64)[rows]
        feats = [self._features[i] for i in rows.tolist()]
        return scan(gid, scores, feats, distinct, endorsed=endorsed, seed=seed, total_groups=total)


def profile_rows(
    rows: Iterable[RolloutRow],
    *,
    k_max: int | None = None,
    hack_scan: bool = True,
    endorsed: Sequence[str] = (),
    seed: int = 0,
    resamples: int = 1000,
) -> Profile:
    """Profile a batch of rows (the CLI's ``rlstream profile``)."""
    acc = ProfileAccumulator(keep_features=hack_scan)
    acc.extend(rows)
    return acc.profile(
        k_max=k_max, hack_scan=hack_scan, endorsed=endorsed, seed=seed, resamples=resamples
    )


def profile_scored(
    rollouts: Iterable[ScoredRollout],
    *,
    k_max: int | None = None,
    hack_scan: bool = True,
    endorsed: Sequence[str] = (),
    seed: int = 0,
    resamples: int = 1000,
) -> Profile:
    """Profile graded rollouts directly (features and fingerprints taken from transcripts)."""
    return profile_rows(
        (RolloutRow.from_scored(s) for s in rollouts),
        k_max=k_max,
        hack_scan=hack_scan,
        endorsed=endorsed,
        seed=seed,
        resamples=resamples,
    )
