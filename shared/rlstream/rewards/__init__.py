"""Rewards: pure, versioned ``(transcript, context) -> RewardResult`` functions."""

from rlstream.rewards.base import Reward, RewardContext, RewardResult

__all__ = ["Reward", "RewardContext", "RewardResult"]
