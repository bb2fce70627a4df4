"""Every shipped reward, fed arbitrary conversations: a valid result or an rlstream error,
never a crash, never a score outside [0, 1], and the same answer twice."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from rlstream.errors import RlstreamError
from rlstream.rewards.base import RewardContext
from rlstream.rewards.customer_support import CustomerSupportReward
from rlstream.rewards.registry import available_rewards, get_reward
from rlstream.transcript import Message, ToolCall, Transcript

pytestmark = pytest.mark.unit
POLICY = Path(__file__).resolve().parents[3] / "examples" / "policies" / "refund_policy.yaml"
WORDS = [
    "refund",
    "I",
    "can't",
    "approve",
    "hate",
    "whatever",
    "#### 7",
    "\\boxed{3/4}",
    "$1,200",
    "escalated",
    "manager",
    "thank you",
    "```json",
    '{"name": "lookup_order"}',
    "```",
    ".",
    "50%",
]
texts = st.lists(st.sampled_from(WORDS) | st.text(max_size=12), max_size=12).map(" ".join)
json_values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | st.text(max_size=8),
    lambda inner: (
        st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=5), inner, max_size=3)
    ),
    max_leaves=6,
)
calls = st.builds(
    ToolCall,
    name=st.sampled_from(["lookup_order", "issue_refund", "submit_decision", "x"]),
    arguments=json_values,
)
messages = st.one_of(
    st.builds(Message, role=st.sampled_from(["user", "system"]), content=texts),
    st.builds(
        Message,
        role=st.just("assistant"),
        content=st.none() | texts,
        tool_calls=st.lists(calls, max_size=2).map(tuple),
    ),
    st.builds(
        Message,
        role=st.just("tool"),
        content=st.none() | texts | json_values.map(str),
        name=st.sampled_from(["lookup_order", None]),
    ),
)
transcripts = st.builds(
    Transcript,
    conversation_id=st.just("c"),
    messages=st.lists(messages, max_size=6).map(tuple),
    outcome=st.dictionaries(
        st.sampled_from(["resolved", "csat", "task_reward", "x"]), json_values, max_size=2
    ),
    label=json_values,
)
CONTEXT = RewardContext(reference=[{"name": "lookup_order", "arguments": {"order_id": "A"}}])


def _reward(name: str) -> Any:
    return get_reward(name, **({"policy": POLICY} if name == "nsr" else {}))


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(t=transcripts)
def test_rewards_never_crash_and_stay_in_range(t: Transcript) -> None:
    for name in available_rewards():
        reward = _reward(name)
        try:
            r = reward(t, CONTEXT)
        except RlstreamError:
            continue
        assert 0.0 <= r.score <= 1.0 and r.passed == (r.score >= r.threshold)
        assert all(0.0 <= x <= 1.0 for x in r.turn_scores)
        assert len(r.turn_scores) == sum(1 for m in t.messages if m.role == "assistant")
        assert reward(t, CONTEXT) == r


@given(
    pre=st.text(alphabet="abcdefghijklmnopqrstuvwxyz", min_size=1, max_size=4),
    post=st.text(alphabet="abcdefghijklmnopqrstuvwxyz", max_size=4),
)
def test_rude_words_only_match_whole_words(pre: str, post: str) -> None:
    word = f"{pre}hate{post}"
    t = Transcript(
        conversation_id="c",
        messages=(
            Message(role="user", content="refund please"),
            Message(
                role="assistant",
                content=f"{word.capitalize()} you need, I've issued the refund. Thanks!",
            ),
        ),
    )
    assert CustomerSupportReward()(t, RewardContext()).components["tone"] == 1.0
