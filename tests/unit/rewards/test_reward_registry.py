from __future__ import annotations

from importlib.metadata import entry_points
from typing import ClassVar

import pytest

from rlstream.errors import UnknownRewardError
from rlstream.rewards import registry
from rlstream.rewards.base import Reward, RewardContext, RewardResult
from rlstream.transcript import Transcript

pytestmark = pytest.mark.unit
SHIPPED = ("customer_support", "gsm8k", "nsr", "outcome", "tool_calling")


def test_shipped_rewards_are_discovered_through_entry_points() -> None:
    eps = {ep.name for ep in entry_points(group="rlstream.rewards")}
    assert set(SHIPPED) <= eps
    assert set(SHIPPED) <= set(registry.available_rewards())
    for name in SHIPPED:
        reward = registry.get_reward(name)
        assert isinstance(reward, Reward)
        assert reward.name == name and reward.version
        assert isinstance(reward.endorsed_features, tuple)
        assert 0.0 <= reward.threshold <= 1.0


def test_unknown_reward_lists_the_available_ones() -> None:
    with pytest.raises(UnknownRewardError) as info:
        registry.get_reward("nope")
    for name in SHIPPED:
        assert name in str(info.value)


class _Const:
    name: ClassVar[str] = "const"
    version: ClassVar[str] = "0.1"
    endorsed_features: ClassVar[tuple[str, ...]] = ()

    def __init__(self, threshold: float = 0.5) -> None:
        self.threshold = threshold

    def __call__(self, transcript: Transcript, context: RewardContext) -> RewardResult:
        return RewardResult(reward="const", version="0.1", score=1.0, passed=True, threshold=0.5)


def test_in_process_registration() -> None:
    registry.register("const", _Const)
    try:
        assert "const" in registry.available_rewards()
        assert registry.get_reward("const", threshold=0.2).threshold == 0.2
    finally:
        registry.unregister("const")
    assert "const" not in registry.available_rewards()
