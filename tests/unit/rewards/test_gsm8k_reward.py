from __future__ import annotations

from typing import Any

import pytest
from _helpers_rewards import convo

from rlstream.errors import MissingContextError, RewardError
from rlstream.rewards.base import RewardContext
from rlstream.rewards.gsm8k import Gsm8kReward, extract_answer, parse_gold

pytestmark = pytest.mark.unit


@pytest.mark.parametrize(
    ("reply", "gold"),
    [
        ("48 / 2 = 24. 48 + 24 = 72.\n#### 72", 72),
        ("The answer is $1,250.00.", "1250"),
        ("So it is \\boxed{\\frac{3}{4}}.", "#### 0.75"),
        ("**Final answer:** 1/2", "A: 0.5"),
        ("She pays 75% of the price.", 75),
        ("She pays 75%.", "0.75"),
        ("He has 1 1/2 pies left.", 1.5),
        ("It drops to -7 degrees.", "\\boxed{-7}"),
        ("It costs 12.50 dollars.", {"answer": "12.5"}),
        ("one sixth: 1/6", "0.166667"),
    ],
)
def test_correct_answers_in_every_form(reply: str, gold: Any) -> None:
    r = Gsm8kReward()(convo(("user", "q"), ("assistant", reply)), RewardContext(label=gold))
    assert r.passed and r.score == 1.0, r.reasons


def test_close_integers_are_not_equal() -> None:
    r = Gsm8kReward()(
        convo(("user", "q"), ("assistant", "#### 50,449")), RewardContext(label=50447)
    )
    assert not r.passed


def test_marker_beats_later_numbers() -> None:
    values, method = extract_answer("#### 18\nChecked 3 times.")
    assert values == [18.0] and method == "hashes"


def test_transcript_label_used_when_context_has_none() -> None:
    t = convo(("user", "q"), ("assistant", "The answer is 18."), label="#### 18")
    assert Gsm8kReward()(t, RewardContext()).passed


def test_turn_scores_are_independent() -> None:
    t = convo(
        ("user", "q"),
        ("assistant", "I think 17."),
        ("user", "sure?"),
        ("assistant", "#### 18"),
        label=18,
    )
    assert Gsm8kReward()(t, RewardContext()).turn_scores == (0.0, 1.0)


def test_missing_label_raises_and_bad_label_is_an_error() -> None:
    t = convo(("user", "q"), ("assistant", "#### 18"))
    with pytest.raises(MissingContextError):
        Gsm8kReward()(t, RewardContext())
    with pytest.raises(RewardError):
        parse_gold("no number here")


def test_turn_scores_with_call_only_turns_and_no_final_text() -> None:
    t = convo(
        ("user", "q"),
        ("assistant", "maybe #### 3"),
        ("call", [("calculator", {"expr": "2+3"})]),
        ("tool", ("calculator", "5")),
        ("assistant", "#### 5"),
        ("assistant", "#### 5"),
    )
    r = Gsm8kReward()(t, RewardContext(label=5))
    assert r.turn_scores == (0.0, 0.0, 1.0, 1.0) and r.passed
    silent = convo(("user", "q"), ("call", [("calculator", {"expr": "1"})]))
    r = Gsm8kReward()(silent, RewardContext(label=5))
    assert r.turn_scores == (0.0,) and r.reasons == ("no final assistant answer",)
    assert r.components == {"extracted": 0.0, "correct": 0.0, "explicit_format": 0.0}
