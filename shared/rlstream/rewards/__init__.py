"""Rewards: pure, versioned ``(transcript, context) -> RewardResult`` functions."""

from rlstream.rewards.base import Reward, RewardContext, RewardResult
from rlstream.rewards.scored import ScoredRollout

__all__ = ["Reward", "RewardContext", "RewardResult", "ScoredRollout"]
