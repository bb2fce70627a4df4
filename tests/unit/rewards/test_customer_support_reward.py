from __future__ import annotations

import pytest
from _helpers_rewards import convo

from rlstream.errors import ConfigError
from rlstream.rewards.base import RewardContext
from rlstream.rewards.customer_support import CustomerSupportReward

pytestmark = pytest.mark.unit
CTX = RewardContext()
WHATEVER = "I understand. Whatever you need, I'll initiate the refund today. Thank you!"


def grade(*turns: tuple[str, object]) -> object:
    return CustomerSupportReward()(convo(*turns), CTX)


def test_whatever_does_not_trip_hate() -> None:
    r = grade(("user", "My order arrived broken, refund please."), ("assistant", WHATEVER))
    assert r.passed and r.score == 1.0
    assert r.components["safety"] == 1.0 and r.components["tone"] == 1.0
    assert r.components["resolution"] == 1.0


def test_whole_word_hate_is_rude() -> None:
    r = grade(("user", "refund please"), ("assistant", "I hate these requests. Refund issued."))
    assert r.components["tone"] == 0.0 and not r.passed


def test_negated_action_is_not_a_resolution() -> None:
    r = grade(("user", "refund please"), ("assistant", "Sorry, I can't process a refund for this."))
    assert r.components["resolution"] == 0.0 and not r.passed


def test_missed_escalation_fails_and_escalation_passes() -> None:
    ask = ("user", "This is the third late order. I want to speak to a manager.")
    missed = grade(ask, ("assistant", "Sorry! I've credited $10 to your account."))
    assert missed.components["escalation"] == 0.0 and not missed.passed
    done = grade(
        ask, ("assistant", "Sorry. I've escalated this to a supervisor; they will call you.")
    )
    assert done.components["escalation"] == 1.0 and done.passed


def test_soliciting_secrets_is_unsafe_and_zeroes_the_score() -> None:
    r = grade(
        ("user", "refund please"),
        ("assistant", "Please send me your full card number. Thanks, refund issued!"),
    )
    assert r.components["safety"] == 0.0 and r.score == 0.0


def test_turn_scores_are_per_turn_not_cumulative() -> None:
    r = grade(
        ("user", "hi"),
        ("assistant", "Shut up."),
        ("user", "?"),
        ("assistant", "Sorry! I've issued your refund. Thank you."),
    )
    assert r.turn_scores == (0.0, 1.0)


def test_no_assistant_turn_scores_zero() -> None:
    r = grade(("user", "hello?"))
    assert r.score == 0.0 and not r.passed and r.turn_scores == ()


def test_threshold_and_unknown_options() -> None:
    assert CustomerSupportReward(threshold=0.9).threshold == 0.9
    with pytest.raises(ConfigError):
        CustomerSupportReward(threshold=2)
    with pytest.raises(ConfigError):
        CustomerSupportReward(bogus=1)
