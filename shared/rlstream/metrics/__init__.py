"""Metrics on graded groups: gradient support, pass@k, verdict, method, reward-hack scan."""

from rlstream.metrics.accumulator import (
    GroupCounts,
    ProfileAccumulator,
    profile_rows,
    profile_scored,
)
from rlstream.metrics.endorse import endorsed_features
from rlstream.metrics.features import surface_features
from rlstream.metrics.models import (
    Bootstrap,
    FeatureCorrelation,
    HackScan,
    Histogram,
    Interval,
    Method,
    Profile,
    Verdict,
)
from rlstream.metrics.passk import pass_at_k, pass_hat_k
from rlstream.metrics.render import render_profile
from rlstream.metrics.rows import RolloutRow

__all__ = [
    "Bootstrap",
    "FeatureCorrelation",
    "GroupCounts",
    "HackScan",
    "Histogram",
    "Interval",
    "Method",
    "Profile",
    "ProfileAccumulator",
    "RolloutRow",
    "Verdict",
    "endorsed_features",
    "pass_at_k",
    "pass_hat_k",
    "profile_rows",
    "profile_scored",
    "render_profile",
    "surface_features",
]
