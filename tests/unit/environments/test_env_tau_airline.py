"""tau-bench's airline domain as a python environment: ground truth scores 1, doing nothing 0."""

from __future__ import annotations

import pytest

from rlstream.environments.tau_airline import TauAirlineEnvironment, load_data, task_id_of
from rlstream.environments.tau_airline.tools import AirlineError, calculate
from rlstream.errors import InputError
from rlstream.transcript import Message, ToolCall

pytestmark = pytest.mark.unit


def _call(name: str, args: dict[str, object], i: int = 0) -> Message:
    return Message(role="assistant", tool_calls=[ToolCall(id=f"c{i}", name=name, arguments=args)])


def test_data_has_the_50_tasks_and_database() -> None:
    data = load_data()
    assert len(data["tasks"]) == 50
    assert (len(data["users"]), len(data["reservations"]), len(data["flights"])) == (500, 2000, 300)


@pytest.mark.parametrize("tid", [0, 1, 2])
def test_ground_truth_actions_score_one_and_a_reply_alone_zero(tid: int) -> None:
    env = TauAirlineEnvironment()
    msgs, tools = env.reset({"task_key": f"task_id:{tid}"})
    assert msgs[0].role == "system" and msgs[1].role == "user"
    assert {t["function"]["name"] for t in tools} >= {"book_reservation", "cancel_reservation"}
    first = env.step(Message(role="assistant", content="Can you confirm?"))
    assert first.messages_out[0].content == "yes" and first.reward == 0.0 and not first.done
    out = None
    for i, action in enumerate(env.task(tid)["actions"]):
        out = env.step(_call(action["name"], action["arguments"], i))
        assert not out.messages_out[0].is_error, out.messages_out[0].content
    assert out is not None and out.reward == 1.0


def test_a_refused_call_is_an_error_result_and_changes_nothing() -> None:
    env = TauAirlineEnvironment()
    env.reset({"task_id": 1})
    before = env.state["reservations"]["Z7GOZK"].copy()
    out = env.step(_call("cancel_reservation", {"reservation_id": "NOPE00"}))
    assert out.messages_out[0].is_error and "reservation not found" in str(
        out.messages_out[0].content
    )
    assert env.state["reservations"]["Z7GOZK"] == before and out.reward == 0.0


def test_task_ids_and_hostile_arithmetic() -> None:
    assert task_id_of({"task_key": "task_id:12"}) == 12
    with pytest.raises(InputError):
        task_id_of({"task_key": "orders-bot:refund"})
    with pytest.raises(InputError):
        TauAirlineEnvironment().task(50)
    assert calculate({}, "(100 - 30) * 2") == "140.0"
    for hostile in ("9**9**9**9", "__import__('os')", "1/0", ""):
        with pytest.raises(AirlineError):
            calculate({}, hostile)
