"""Calling an untrusted environment: a deadline on every call, a check on every answer.

A synchronous method runs in a daemon thread and is waited for with ``asyncio.wait_for``;
past the deadline the episode is failed and the thread abandoned (Python cannot kill a
thread; a daemon thread never blocks the interpreter's exit). An ``async`` method is
awaited under the same deadline and cancelled when it passes. Whatever goes wrong (an
exception, a timeout, an answer of the wrong shape) becomes one
:class:`~rlstream.environments.base.EnvironmentFailure` with a one-line reason.
"""

from __future__ import annotations

import asyncio
import inspect
import math
import threading
from collections.abc import Callable, Mapping, Sequence
from concurrent.futures import Future
from typing import Any

from pydantic import ValidationError

from rlstream.environments.base import EnvironmentFailure, StepResult, Tools
from rlstream.transcript import Message

#: default deadline of one reset/step call, seconds
DEFAULT_TIMEOUT_S = 30.0
_MAX_REASON = 300


def _short(exc: BaseException) -> str:
    text = f"{type(exc).__name__}: {exc}".replace("\n", " ")
    return text[:_MAX_REASON]


def _in_thread(fn: Callable[..., Any], *args: Any) -> Future[Any]:
    fut: Future[Any] = Future()

    def run() -> None:
        # RUNNING before the call: a deadline that passes later cannot cancel the future
        # (cancel() refuses a running one), so the late result lands on a live future
        # instead of raising InvalidStateError in this abandoned thread
        if not fut.set_running_or_notify_cancel():
            return
        try:
            fut.set_result(fn(*args))
        except BaseException as exc:  # handed to the waiting episode, never lost
            fut.set_exception(exc)

    threading.Thread(target=run, name="rlstream-env-call", daemon=True).start()
    return fut


async def call(method: Callable[..., Any], *args: Any, what: str, timeout_s: float) -> Any:
    """``method(*args)`` under a deadline; EnvironmentFailure on any failure."""
    try:
        if inspect.iscoroutinefunction(method):
            return await asyncio.wait_for(method(*args), timeout_s)
        return await asyncio.wait_for(asyncio.wrap_future(_in_thread(method, *args)), timeout_s)
    except TimeoutError as exc:
        raise EnvironmentFailure(f"{what} timed out after {timeout_s:g} s") from exc
    except asyncio.CancelledError:
        raise
    except Exception as exc:
        raise EnvironmentFailure(f"{what} raised {_short(exc)}") from exc


def as_message(value: Any, what: str) -> Message:
    """A Message, or a dict that validates as one."""
    if isinstance(value, Message):
        return value
    if isinstance(value, Mapping):
        try:
            return Message.model_validate(dict(value))
        except ValidationError as exc:
            raise EnvironmentFailure(f"{what}: not a message ({_short(exc)})") from exc
    raise EnvironmentFailure(f"{what}: a {type(value).__name__} is not a message")


def _messages(value: Any, what: str) -> tuple[Message, ...]:
    if isinstance(value, str | bytes) or not isinstance(value, Sequence):
        raise EnvironmentFailure(f"{what}: expected a list of messages, got {type(value).__name__}")
    return tuple(as_message(m, f"{what}[{i}]") for i, m in enumerate(value))


def checked_reset(value: Any) -> tuple[tuple[Message, ...], Tools]:
    """reset's answer as (messages, tools), or EnvironmentFailure saying what is wrong."""
    if not isinstance(value, tuple | list) or len(value) != 2:
        raise EnvironmentFailure(f"reset returned a {type(value).__name__}, not (messages, tools)")
    messages = _messages(value[0], "reset messages")
    if not messages:
        raise EnvironmentFailure("reset returned no messages")
    tools = value[1]
    if not isinstance(tools, Sequence) or isinstance(tools, str | bytes):
        raise EnvironmentFailure(f"reset tools: expected a list, got {type(tools).__name__}")
    if not all(isinstance(t, Mapping) for t in tools):
        raise EnvironmentFailure("reset tools: every tool spec must be a JSON object")
    return messages, [dict(t) for t in tools]


def _reward(value: Any) -> float | None:
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise EnvironmentFailure(f"step reward is a {type(value).__name__}, not a number")
    if not math.isfinite(value):
        raise EnvironmentFailure(f"step reward {value!r} is not finite")
    return float(value)


def checked_step(value: Any) -> StepResult:
    """step's answer as a StepResult (a StepResult or a mapping with its fields)."""
    if isinstance(value, StepResult):
        fields: Mapping[str, Any] = {
            "messages_out": value.messages_out,
            "done": value.done,
            "reward": value.reward,
            "info": value.info,
        }
    elif isinstance(value, Mapping):
        fields = value
    else:
        raise EnvironmentFailure(f"step returned a {type(value).__name__}, not a StepResult")
    done = fields.get("done", False)
    if not isinstance(done, bool):
        raise EnvironmentFailure(f"step done is a {type(done).__name__}, not a bool")
    info = fields.get("info") or {}
    if not isinstance(info, Mapping):
        raise EnvironmentFailure(f"step info is a {type(info).__name__}, not a mapping")
    return StepResult(
        messages_out=_messages(fields.get("messages_out", ()), "step messages_out"),
        done=done,
        reward=_reward(fields.get("reward")),
        info=dict(info),
    )
