"""run_episode: turns, truncation (the last step's reward is kept), a stopping sampler, and
how a model's raw text becomes an assistant message."""

from __future__ import annotations

from typing import Any

import pytest
from env_builders import say, scripted

from rlstream.environments import PythonEnvironment, StepResult, assistant_message, run_episode
from rlstream.environments.orders import TASKS
from rlstream.transcript import Message

pytestmark = pytest.mark.unit
CANCEL = '```json\n{"name": "cancel_order", "arguments": {"order_id": "A-1001", "reason": "no_longer_needed"}}\n```'


def test_fenced_calls_become_tool_calls_and_leave_the_content() -> None:
    m = assistant_message("Sure.\n" + CANCEL)
    assert m.content == "Sure." and m.extra["raw"].endswith("```")
    assert [(c.name, c.arguments) for c in m.tool_calls] == [
        ("cancel_order", {"order_id": "A-1001", "reason": "no_longer_needed"})
    ]
    plain = assistant_message("```python\nprint(1)\n``` no call here")
    assert plain.tool_calls == () and plain.content == "```python\nprint(1)\n``` no call here"


async def test_max_turns_truncates_and_keeps_the_last_reward() -> None:
    calls = [assistant_message(CANCEL)] * 5
    ep = await run_episode(PythonEnvironment(), TASKS[0], scripted(calls), max_turns=2)
    assert ep.status == "truncated" and ep.turns == 2
    assert ep.reward == 1.0  # cancelled on the first turn; the second call errored harmlessly
    assert ep.messages[-1].is_error


async def test_a_sampler_that_stops_truncates() -> None:
    ep = await run_episode(PythonEnvironment(), TASKS[1], scripted([]))
    assert ep.status == "truncated" and ep.turns == 0 and ep.reward is None
    assert [m.role for m in ep.messages] == ["system", "user"]


async def test_the_sampler_sees_the_whole_conversation_and_the_tools() -> None:
    seen: list[tuple[int, int]] = []

    async def sampler(messages: list[Message], tools: list[dict[str, Any]]) -> Message:
        seen.append((len(messages), len(tools)))
        return assistant_message(CANCEL) if len(seen) == 1 else say("assistant", "done")

    ep = await run_episode(PythonEnvironment(), TASKS[0], sampler)
    assert seen == [(2, 3), (4, 3)] and ep.status == "done" and ep.success


class _NeverDone:
    def reset(self, task: Any) -> Any:
        return [say("user", "go")], []

    def step(self, message: Message) -> StepResult:
        return StepResult((say("user", "more"),), False, None)


async def test_an_environment_that_never_ends_is_cut_at_max_turns_ungraded() -> None:
    ep = await run_episode(_NeverDone(), {}, scripted([say("assistant", "x")] * 9), max_turns=3)
    assert ep.status == "truncated" and ep.reward is None and ep.turns == 3
