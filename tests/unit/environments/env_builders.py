"""Builders for the environment tests: hand-made logged trajectories and scripted samplers."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from rlstream.environments import Sampler
from rlstream.rollout import ScoredRollout
from rlstream.transcript import Message, ToolCall, Transcript


def call(name: str, cid: str, **args: Any) -> Message:
    return Message(role="assistant", tool_calls=(ToolCall(id=cid, name=name, arguments=args),))


def result(cid: str, name: str, content: str) -> Message:
    return Message(role="tool", tool_call_id=cid, name=name, content=content)


def say(role: str, text: str) -> Message:
    return Message(role=role, content=text)  # type: ignore[arg-type]


def logged(task: str, i: int, passed: bool, body: Sequence[Message]) -> ScoredRollout:
    """One logged conversation: a system prompt, the user's opening, then ``body``."""
    t = Transcript(
        conversation_id=f"{task}-{i}",
        task_key=task,
        messages=(say("system", "sys"), say("user", f"help {i}"), *body),
    )
    return ScoredRollout(
        rollout_id=f"{task}-r{i}",
        transcript=t,
        results=(),
        score=1.0 if passed else 0.0,
        passed=passed,
        reward_spec="outcome",
    )


def scripted(turns: Sequence[Message]) -> Sampler:
    """A sampler that plays ``turns`` in order, then stops (None)."""
    it = iter(turns)

    async def sample(messages: list[Message], tools: list[dict[str, Any]]) -> Message | None:
        return next(it, None)

    return sample
