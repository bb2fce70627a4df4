"""One episode: reset, then sample a turn and step until the environment is done.

Every environment call goes through :mod:`rlstream.environments.guard`, so a hostile
environment ends its episode as ``status="error"`` with reward 0.0 (a graded failure) and
``error`` saying why; it never raises out of :func:`run_episode`. The sampler is the
caller's and is trusted: its exceptions propagate. It may return None to stop (a token
budget spent): the episode is then ``truncated`` and keeps the last step's reward.
"""

from __future__ import annotations

import asyncio
import re
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import Any, Literal

from rlstream.environments.base import Environment, EnvironmentFailure, Task, Tools, task_id_of
from rlstream.environments.guard import DEFAULT_TIMEOUT_S, call, checked_reset, checked_step
from rlstream.rewards.toolcalls import calls_in_text
from rlstream.transcript import Message, ToolCall

#: the policy: (conversation so far, tools) -> its next assistant message, or None to stop
Sampler = Callable[[list[Message], Tools], Awaitable[Message | None]]
Status = Literal["done", "truncated", "off_log", "error"]
DEFAULT_MAX_TURNS = 16


@dataclass(slots=True)
class Episode:
    """How one episode went. ``reward`` is None only for ungraded ones (off-log, or
    truncated where the environment grades only whole episodes)."""

    task_id: str
    status: Status
    reward: float | None
    messages: list[Message]
    tools: Tools
    turns: int
    error: str | None = None
    info: dict[str, Any] = field(default_factory=dict)

    @property
    def success(self) -> bool:
        """Task success: a graded reward of at least 1.0 (both built-ins score 0 or 1)."""
        return self.reward is not None and self.reward >= 1.0


_FENCED = re.compile(r"```.*?```", re.S)


def assistant_message(text: str) -> Message:
    """A model's raw text as an assistant message: its fenced JSON calls (the form the
    builtin chat template renders and the tool_calling reward reads) become tool calls and
    leave the content, so a call is never counted twice; the raw text stays in ``extra``."""
    found = calls_in_text(text)
    if not found:
        return Message(role="assistant", content=text)
    calls = tuple(
        ToolCall(id=f"call_{i}", name=name, arguments=args if isinstance(args, dict) else {})
        for i, (name, args) in enumerate(found)
    )
    rest = _FENCED.sub(lambda m: "" if calls_in_text(m.group(0)) else m.group(0), text).strip()
    return Message(role="assistant", content=rest or None, tool_calls=calls, extra={"raw": text})


def _method(env: Any, name: str) -> Any:
    """``env.<name>``; an object without it (or whose attribute raises) is a failure."""
    try:
        method = getattr(env, name)
    except Exception as exc:
        raise EnvironmentFailure(f"{name}: {type(exc).__name__}: {exc}") from exc
    if not callable(method):
        raise EnvironmentFailure(f"the environment has no callable {name}()")
    return method


async def run_episode(
    env: Environment,
    task: Task,
    sampler: Sampler,
    *,
    max_turns: int = DEFAULT_MAX_TURNS,
    timeout_s: float = DEFAULT_TIMEOUT_S,
) -> Episode:
    """Play ``task`` in ``env`` with ``sampler`` for at most ``max_turns`` assistant turns."""
    tid = task_id_of(task)
    try:
        messages_in, tools = checked_reset(
            await call(_method(env, "reset"), task, what="reset", timeout_s=timeout_s)
        )
    except EnvironmentFailure as exc:
        return Episode(tid, "error", 0.0, [], [], 0, error=str(exc), info={"error": str(exc)})
    messages = list(messages_in)
    reward: float | None = None
    info: dict[str, Any] = {}
    for turn in range(max_turns):
        reply = await sampler(list(messages), tools)
        if reply is None:
            return Episode(tid, "truncated", reward, messages, tools, turn, info=info)
        messages.append(reply)
        try:
            step = _method(env, "step")
            result = checked_step(await call(step, reply, what="step", timeout_s=timeout_s))
        except EnvironmentFailure as exc:
            bad = {**info, "error": str(exc)}
            return Episode(tid, "error", 0.0, messages, tools, turn + 1, error=str(exc), info=bad)
        messages.extend(result.messages_out)
        reward, info = result.reward, result.info
        if info.get("off_log") is True:
            return Episode(tid, "off_log", None, messages, tools, turn + 1, info=info)
        if result.done:
            return Episode(tid, "done", reward, messages, tools, turn + 1, info=info)
    return Episode(tid, "truncated", reward, messages, tools, max_turns, info=info)


async def opening(
    env: Environment, task: Task, timeout_s: float = DEFAULT_TIMEOUT_S
) -> tuple[tuple[Message, ...], Tools]:
    """A task's opening messages and tools (reset under its deadline, checked); raises
    :class:`EnvironmentFailure`. Trainers build their prompt column from it."""
    return checked_reset(await call(_method(env, "reset"), task, what="reset", timeout_s=timeout_s))


def run_episode_sync(
    env: Environment,
    task: Task,
    sampler: Sampler,
    *,
    max_turns: int = DEFAULT_MAX_TURNS,
    timeout_s: float = DEFAULT_TIMEOUT_S,
) -> Episode:
    """:func:`run_episode` from synchronous code with no running event loop (TRL's
    rollout hook)."""
    return asyncio.run(run_episode(env, task, sampler, max_turns=max_turns, timeout_s=timeout_s))
