"""Rewards: pure, versioned ``(transcript, context) -> RewardResult`` functions.

How to add one (plain or group-aware): ``docs/rewards.md``.
"""

from rlstream.rewards.base import (
    GroupAwareReward,
    GroupScorer,
    GroupScoringReward,
    Reward,
    RewardContext,
    RewardResult,
    group_scorer_factory,
    is_group_aware,
    make_result,
)

__all__ = [
    "GroupAwareReward",
    "GroupScorer",
    "GroupScoringReward",
    "Reward",
    "RewardContext",
    "RewardResult",
    "group_scorer_factory",
    "is_group_aware",
    "make_result",
]
