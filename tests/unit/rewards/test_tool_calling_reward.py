from __future__ import annotations

from typing import Any

import pytest
from _helpers_rewards import convo

from rlstream.errors import MissingContextError
from rlstream.rewards.base import RewardContext
from rlstream.rewards.tool_calling import ToolCallingReward
from rlstream.transcript import Message, Transcript

pytestmark = pytest.mark.unit

TOOLS = (
    {
        "type": "function",
        "function": {
            "name": "lookup_order",
            "parameters": {"type": "object", "properties": {"order_id": {"type": "string"}}},
        },
    },
    {
        "type": "function",
        "function": {
            "name": "issue_refund",
            "parameters": {
                "type": "object",
                "properties": {"order_id": {"type": "string"}, "amount": {"type": "number"}},
            },
        },
    },
)
REF = [
    {"name": "lookup_order", "arguments": {"order_id": "ORD-1"}},
    {"name": "issue_refund", "arguments": {"order_id": "ORD-1", "amount": 5}},
]


def run(calls: list[tuple[str, Any]], **ctx: Any) -> Any:
    t = convo(("user", "refund ORD-1"), ("call", calls), ("assistant", "Done."), tools=TOOLS)
    return ToolCallingReward()(t, RewardContext(**ctx))


def test_correct_calls_with_string_numbers_pass() -> None:
    r = run(
        [
            ("lookup_order", {"order_id": "ORD-1"}),
            ("issue_refund", {"amount": "5", "order_id": "ORD-1"}),
        ],
        reference=REF,
    )
    assert r.passed and r.score == 1.0


def test_wrong_argument_fails() -> None:
    r = run(
        [
            ("lookup_order", {"order_id": "ORD-1"}),
            ("issue_refund", {"order_id": "ORD-1", "amount": 50}),
        ],
        reference=REF,
    )
    assert not r.passed and r.components["correct_calls"] == 0.5
    assert any("wrong arguments" in x for x in r.reasons)


def test_invented_tool_and_spam_and_order_are_penalised() -> None:
    invented = run(
        [("lookup_order", {"order_id": "ORD-1"}), ("refund_now", {"order_id": "ORD-1"})],
        reference=REF,
    )
    assert invented.components["no_invented"] == 0.0 and not invented.passed
    spam = run(
        [("lookup_order", {"order_id": "ORD-1"})] * 3
        + [("issue_refund", {"order_id": "ORD-1", "amount": 5})],
        reference=REF,
    )
    assert spam.components["no_spam"] == 0.0 and spam.score == 0.5
    swapped = run(
        [
            ("issue_refund", {"order_id": "ORD-1", "amount": 5}),
            ("lookup_order", {"order_id": "ORD-1"}),
        ],
        reference=REF,
    )
    assert swapped.components["order"] == 0.5 and not swapped.passed


def test_fenced_json_calls_in_text_are_read() -> None:
    text = 'Checking.\n```json\n{"name": "lookup_order", "arguments": {"order_id": "ORD-1"}}\n```'
    text2 = '```json\n{"tool": "issue_refund", "parameters": "{\\"order_id\\": \\"ORD-1\\", \\"amount\\": 5.0}"}\n```'
    t = Transcript(
        conversation_id="c",
        tools=TOOLS,
        messages=(
            Message(role="user", content="refund"),
            Message(role="assistant", content=text),
            Message(role="assistant", content=text2),
        ),
    )
    r = ToolCallingReward()(t, RewardContext(reference=REF))
    assert r.passed and r.turn_scores == (1.0, 1.0)


def test_schema_keeps_string_ids_as_strings() -> None:
    tools = (
        {"name": "lookup_order", "input_schema": {"properties": {"order_id": {"type": "string"}}}},
    )
    t = convo(("call", [("lookup_order", {"order_id": 7})]), tools=tools)
    ok = ToolCallingReward()(
        t, RewardContext(reference=[{"name": "lookup_order", "arguments": {"order_id": "7"}}])
    )
    assert ok.passed
    bad = ToolCallingReward()(
        t, RewardContext(reference=[{"name": "lookup_order", "arguments": {"order_id": "007"}}])
    )
    assert not bad.passed


def test_label_with_expected_calls_is_a_reference() -> None:
    t = convo(
        ("call", [("lookup_order", {"order_id": "ORD-1"})]), label={"expected_calls": REF[:1]}
    )
    assert ToolCallingReward()(t, RewardContext()).passed


def test_reference_from_passing_peers_drops_free_text() -> None:
    def peer(cid: str, reason: str) -> Transcript:
        return convo(
            (
                "call",
                [
                    ("lookup_order", {"order_id": "ORD-1"}),
                    ("escalate", {"order_id": "ORD-1", "reason": reason}),
                ],
            ),
            conversation_id=cid,
        )

    peers = (peer("p1", "customer wants a manager"), peer("p2", "late delivery again"))
    me = peer("me", "something else entirely")
    assert ToolCallingReward()(me, RewardContext(group=peers)).passed
    wrong = convo(
        ("call", [("lookup_order", {"order_id": "ORD-2"}), ("escalate", {"order_id": "ORD-1"})]),
        conversation_id="w",
    )
    assert not ToolCallingReward()(wrong, RewardContext(group=peers)).passed


def test_no_reference_raises_missing_context() -> None:
    t = convo(("call", [("lookup_order", {"order_id": "ORD-1"})]))
    with pytest.raises(MissingContextError):
        ToolCallingReward()(t, RewardContext())
    # the rollout itself is not its own peer
    with pytest.raises(MissingContextError):
        ToolCallingReward()(t, RewardContext(group=(t,)))
