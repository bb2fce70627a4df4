"""The python environment: tool functions over a state, reward = the final state equals the
state the ground-truth actions produce. States below are computed by hand."""

from __future__ import annotations

import copy
from typing import Any

import pytest
from env_builders import scripted

from rlstream.environments import Domain, PythonEnvironment, assistant_message, run_episode
from rlstream.environments.orders import TASKS, initial_state
from rlstream.errors import InputError
from rlstream.transcript import Message, ToolCall

pytestmark = pytest.mark.unit


def _call(name: str, **args: Any) -> Message:
    return Message(role="assistant", tool_calls=(ToolCall(id="c1", name=name, arguments=args),))


def test_cancel_reaches_the_hand_computed_state_and_scores_1() -> None:
    env = PythonEnvironment()
    msgs, tools = env.reset(TASKS[0])
    assert [m.role for m in msgs] == ["system", "user"]
    assert {t["function"]["name"] for t in tools} == {"get_order", "cancel_order", "refund"}
    cancel = next(t for t in tools if t["function"]["name"] == "cancel_order")["function"]
    assert cancel["parameters"]["required"] == ["order_id", "reason"]
    assert cancel["parameters"]["properties"]["reason"] == {"type": "string"}
    step = env.step(_call("cancel_order", order_id="A-1001", reason="no_longer_needed"))
    expected = initial_state()
    expected["orders"]["A-1001"] = {
        "status": "cancelled",
        "total": 40.0,
        "refunded": 0.0,
        "cancel_reason": "no_longer_needed",
    }
    assert env.state == expected
    assert not step.done and step.reward == 1.0
    assert step.messages_out[0].role == "tool" and step.messages_out[0].tool_call_id == "c1"
    assert env.step(Message(role="assistant", content="Done.")).done


def test_a_wrong_argument_leaves_another_state_and_scores_0() -> None:
    env = PythonEnvironment()
    env.reset(TASKS[0])
    step = env.step(_call("cancel_order", order_id="A-1001", reason="ordered_by_mistake"))
    assert env.state["orders"]["A-1001"]["cancel_reason"] == "ordered_by_mistake"
    assert step.reward == 0.0


def test_refund_state_by_hand_and_partial_progress() -> None:
    env = PythonEnvironment()
    env.reset(TASKS[1])  # refund 10 on A-1002 (25.5 delivered)
    assert env.reward() == 0.0
    env.step(_call("refund", order_id="a-1002", amount="4"))
    assert env.state["orders"]["A-1002"] == {"status": "delivered", "total": 25.5, "refunded": 4.0}
    assert env.reward() == 0.0
    env.step(_call("refund", order_id="A-1002", amount=6))
    assert env.state["orders"]["A-1002"]["refunded"] == 10.0
    assert env.reward() == 1.0  # 4 + 6 leaves the state 10 leaves


def test_model_mistakes_are_answered_as_tool_errors_not_failures() -> None:
    env = PythonEnvironment()
    env.reset(TASKS[0])
    before = copy.deepcopy(env.state)
    for bad in (
        _call("delete_everything"),
        _call("cancel_order", order_id="A-1002", reason="no_longer_needed"),  # delivered
        _call("cancel_order", order="A-1001"),  # wrong argument name
        _call("get_order", order_id="Z-9"),
    ):
        out = env.step(bad)
        assert not out.done and out.messages_out[0].is_error
        assert out.messages_out[0].content.startswith("Error: ")
    assert env.state == before


def test_followups_answer_replies_until_they_run_out() -> None:
    env = PythonEnvironment()
    env.reset({**TASKS[2], "followups": ["and A-1001?"]})
    first = env.step(Message(role="assistant", content="Which order?"))
    assert not first.done and first.messages_out == (Message(role="user", content="and A-1001?"),)
    assert env.step(Message(role="assistant", content="ok")).done


def test_ground_truth_that_fails_is_the_tasks_fault() -> None:
    env = PythonEnvironment()
    bad = {
        "instruction": "x",
        "actions": [{"name": "refund", "arguments": {"order_id": "A-1001", "amount": 1}}],
    }
    with pytest.raises(InputError, match="ground-truth action 0 failed"):
        env.reset(bad)


def bump(state: dict[str, Any], by: int) -> int:
    """Add to the counter."""
    state["n"] += by
    return int(state["n"])


COUNTER = Domain.of("counter", [bump], lambda: {"n": 0}, "Count.")


def make_counter() -> Domain:
    return COUNTER


@pytest.mark.parametrize("attr", ["COUNTER", "make_counter"])
async def test_a_users_own_module_by_module_attr(attr: str) -> None:
    env = PythonEnvironment(domain=f"{__name__}:{attr}")
    task = {
        "task_id": "t",
        "instruction": "add 3",
        "actions": [{"name": "bump", "kwargs": {"by": 3}}],
    }
    ep = await run_episode(
        env,
        task,
        scripted(
            [
                assistant_message('```json\n{"name": "bump", "arguments": {"by": 3}}\n```'),
                assistant_message("Added."),
            ]
        ),
    )
    assert ep.status == "done" and ep.reward == 1.0 and ep.success and ep.turns == 2
    assert env.state == {"n": 3}
    assert ep.messages[3].role == "tool" and ep.messages[3].content == "3"
