"""The profile's frozen, JSON-ready models (they travel in dataset manifests and events)."""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

Verdict = Literal["trains", "thin", "flat", "insufficient"]
Method = Literal["grpo", "dpo", "sft", "none"]

#: gradient support at or above this trains; below FLAT it is flat
TRAINS = 0.3
FLAT = 0.05
#: no verdict when the median graded group is smaller than this
MIN_MEDIAN_N = 4


class _Frozen(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")


class Histogram(_Frozen):
    """Group pass rates of graded groups (n >= 2) in 10 equal bins over [0, 1]."""

    edges: tuple[float, ...]
    counts: tuple[int, ...]


class Interval(_Frozen):
    low: float
    high: float


class Bootstrap(_Frozen):
    """Percentile bootstrap over groups (tasks), never rows (Miller 2024)."""

    level: float
    resamples: int
    seed: int
    gradient_support: Interval | None = None
    gradient_support_unbiased: Interval | None = None
    pass_at_1: Interval | None = None
    headroom: Interval | None = None


class FeatureCorrelation(_Frozen):
    name: str
    within_rho: float
    pooled_rho: float | None
    above_floor: bool
    endorsed: bool


class HackScan(_Frozen):
    """Within-group correlation of reward with surface features against a shuffle floor."""

    scanned_groups: int
    scanned_rollouts: int
    sampled: bool
    median_distinct: float
    floor: float | None
    shuffles: int
    seed: int
    features: tuple[FeatureCorrelation, ...] = ()
    #: features non-zero on too few rows to rank (see hackscan.MIN_OBS)
    skipped_sparse: tuple[str, ...] = ()
    above_floor: tuple[str, ...] = ()
    pooled_flags: tuple[str, ...] = ()
    top_feature: str | None = None
    alarm: bool = False
    alarms: tuple[str, ...] = ()
    warnings: tuple[str, ...] = ()
    refused: bool = False
    refused_reason: str | None = None


class Profile(_Frozen):
    """What a set of graded groups can teach: support, pass@k, verdict, method, hack scan."""

    rollouts: int
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
    #: groups behind each pass@k point (n >= k)
    pass_at_k_groups: dict[str, int] = Field(default_factory=dict)
    pass_hat_k: dict[str, float]
    headline_k: int | None
    headroom: float | None
    mean_reward: float | None
    #: distinct policies (agent version / policy version / model); groups are per policy
    policies: int = 0
    #: tasks whose rollouts came from several policies (profiled as one group per policy)
    mixed_policy_tasks: int = 0
    pass_rate: float | None
    verdict: Verdict
    method: Method
    method_reason: str
    histogram: Histogram
    hack_scan: HackScan | None = None
    ci: Bootstrap | None = None

    def to_json_dict(self) -> dict[str, Any]:
        """Plain JSON types only (keys of pass@k are strings), stable across runs."""
        return self.model_dump(mode="json")
