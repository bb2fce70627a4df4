"""Hostile environments (raise, hang past the deadline, return garbage) end their episode as
a graded failure with a reason; the episode runner itself never raises or hangs."""

from __future__ import annotations

import asyncio
import math
import time
from typing import Any

import pytest
from env_builders import say, scripted

from rlstream.environments import StepResult, run_episode
from rlstream.environments.base import EnvironmentFailure
from rlstream.environments.guard import checked_reset, checked_step
from rlstream.transcript import Message

pytestmark = pytest.mark.unit
GOOD_RESET = ([say("user", "hi")], [])


class Hostile:
    """reset/step behave as told: "ok", "raise", "hang", "ahang" or a garbage value."""

    def __init__(self, reset: Any = "ok", step: Any = "ok") -> None:
        self.on_reset, self.on_step = reset, step

    @staticmethod
    def _act(how: Any, ok: Any) -> Any:
        if isinstance(how, str) and how == "ok":
            return ok
        if isinstance(how, str) and how == "raise":
            raise RuntimeError("boom")
        if isinstance(how, str) and how == "hang":
            time.sleep(30)
        return how

    def reset(self, task: Any) -> Any:
        return self._act(self.on_reset, GOOD_RESET)

    def step(self, message: Message) -> Any:
        return self._act(self.on_step, StepResult((), True, 1.0))


class AsyncHang:
    async def reset(self, task: Any) -> Any:
        return GOOD_RESET

    async def step(self, message: Message) -> Any:
        await asyncio.sleep(30)


async def _play(env: Any, timeout_s: float = 5.0) -> Any:
    return await run_episode(
        env, {"task_id": "t"}, scripted([say("assistant", "x")]), timeout_s=timeout_s
    )


async def test_a_well_behaved_environment_passes_the_guard() -> None:
    ep = await _play(Hostile())
    assert ep.status == "done" and ep.reward == 1.0 and ep.error is None


@pytest.mark.parametrize("where", ["reset", "step"])
async def test_raising_is_a_graded_failure_with_the_reason(where: str) -> None:
    ep = await _play(Hostile(**{where: "raise"}))
    assert ep.status == "error" and ep.reward == 0.0 and not ep.success
    assert ep.info["error"] == ep.error == f"{where} raised RuntimeError: boom"


@pytest.mark.parametrize("env", [Hostile(reset="hang"), Hostile(step="hang"), AsyncHang()])
async def test_hanging_past_the_timeout_is_a_graded_failure(env: Any) -> None:
    t0 = time.monotonic()
    ep = await _play(env, timeout_s=0.3)
    assert time.monotonic() - t0 < 5
    assert ep.status == "error" and ep.reward == 0.0
    assert ep.error is not None and "timed out after 0.3 s" in ep.error


@pytest.mark.parametrize(
    ("reset", "step", "reason"),
    [
        ("not a pair", "ok", "reset returned a str"),
        (([42], []), "ok", "reset messages[0]: a int is not a message"),
        (([{"role": "wizard"}], []), "ok", "reset messages[0]: not a message"),
        (([], []), "ok", "reset returned no messages"),
        (([say("user", "x")], "tools"), "ok", "reset tools: expected a list"),
        (([say("user", "x")], [1]), "ok", "every tool spec must be a JSON object"),
        ("ok", 7, "step returned a int"),
        ("ok", {"done": "yes"}, "step done is a str"),
        ("ok", {"done": True, "reward": "1"}, "step reward is a str"),
        ("ok", {"done": True, "reward": math.nan}, "is not finite"),
        ("ok", {"done": True, "reward": True}, "step reward is a bool"),
        ("ok", {"messages_out": "hello"}, "expected a list of messages"),
        ("ok", {"messages_out": [None]}, "a NoneType is not a message"),
        ("ok", {"info": [1]}, "step info is a list"),
    ],
)
async def test_garbage_is_a_graded_failure_with_the_reason(
    reset: Any, step: Any, reason: str
) -> None:
    ep = await _play(Hostile(reset, step))
    assert ep.status == "error" and ep.reward == 0.0
    assert ep.error is not None and reason in ep.error


def test_dict_answers_that_validate_are_accepted() -> None:
    msgs, tools = checked_reset(([{"role": "user", "content": "hi"}], [{"name": "t"}]))
    assert msgs == (say("user", "hi"),) and tools == [{"name": "t"}]
    got = checked_step(
        {"messages_out": [{"role": "tool", "content": "r"}], "done": True, "reward": 1}
    )
    assert got.reward == 1.0 and got.done and got.messages_out[0].role == "tool"
    with pytest.raises(EnvironmentFailure):
        checked_step(None)


class _NoMethods:
    reset = 3


class _RaisingAttribute:
    @property
    def step(self) -> Any:
        raise RuntimeError("no step today")

    def reset(self, task: Any) -> Any:
        return GOOD_RESET


@pytest.mark.parametrize(
    ("env", "reason"),
    [
        (_NoMethods(), "no callable reset()"),
        (_RaisingAttribute(), "step: RuntimeError: no step today"),
    ],
)
async def test_missing_or_raising_methods_are_graded_failures(env: Any, reason: str) -> None:
    ep = await _play(env)
    assert ep.status == "error" and ep.error is not None and reason in ep.error
