from __future__ import annotations

import pytest
from _helpers_rewards import convo

from rlstream.errors import ConfigError, MissingContextError, RewardError
from rlstream.rewards.base import RewardContext
from rlstream.rewards.outcome import OutcomeReward

pytestmark = pytest.mark.unit


def score(outcome: dict[str, object], **opts: object) -> float:
    t = convo(("user", "hi"), ("assistant", "hello"), outcome=outcome)
    return OutcomeReward(**opts)(t, RewardContext()).score


def test_signals_map_to_unit_interval() -> None:
    assert score({"resolved": True}) == 1.0
    assert score({"resolved": "no"}) == 0.0
    assert score({"csat": 4}) == 0.75
    assert score({"csat": "5", "resolved": False}) == 0.5
    assert score({"task_reward": 7}, reward_range=[0, 10]) == pytest.approx(0.7)


def test_missing_outcome_raises() -> None:
    with pytest.raises(MissingContextError):
        score({})
    with pytest.raises(MissingContextError):
        score({"finish_reason": "stop"})


def test_unreadable_values_and_bad_config() -> None:
    with pytest.raises(RewardError):
        score({"resolved": "maybe"})
    with pytest.raises(ConfigError):
        OutcomeReward(reward_range=[1, 1])


def test_uniform_turn_credit() -> None:
    t = convo(
        ("user", "a"),
        ("assistant", "b"),
        ("user", "c"),
        ("assistant", "d"),
        outcome={"resolved": True},
    )
    assert OutcomeReward()(t, RewardContext()).turn_scores == (1.0, 1.0)
