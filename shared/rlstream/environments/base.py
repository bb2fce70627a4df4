"""The one environment protocol that evaluation and online RL both drive.

An environment plays everything around the assistant: ``reset(task)`` gives the opening
messages and the tools; ``step(assistant_message)`` answers one assistant turn with tool
results or the next user turn, says whether the episode is over and what it earned.
Either method may be ``async``. The drivers (:mod:`rlstream.environments.episode`, the TRL
and OpenRLHF adapters) never trust an environment: they call it under a deadline and check
what it returns (:mod:`rlstream.environments.guard`).

``StepResult.reward`` is the episode's reward *if it ended after this step* (None: not
gradeable there). A driver that stops an episode early (turn or token budget) keeps the
last one, so an environment that can grade any state (``python``) grades truncated episodes
too, and one that cannot (``replay``) leaves them ungraded.
"""

from __future__ import annotations

from collections.abc import Awaitable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol, runtime_checkable

from rlstream.errors import RlstreamError
from rlstream.transcript import Message

#: a task: a JSON object whose keys each environment documents (``task_id`` by convention)
Task = Mapping[str, Any]
#: OpenAI-style tool specs (``{"type": "function", "function": {name, description, parameters}}``)
Tools = list[dict[str, Any]]


@dataclass(frozen=True, slots=True)
class StepResult:
    """What one assistant turn got back from the environment."""

    messages_out: tuple[Message, ...] = ()
    done: bool = False
    reward: float | None = None
    info: dict[str, Any] = field(default_factory=dict)


@runtime_checkable
class Environment(Protocol):
    """``reset`` then ``step`` until ``done``; one instance plays one episode at a time."""

    def reset(self, task: Task) -> tuple[Sequence[Message], Tools] | Awaitable[Any]: ...

    def step(self, message: Message) -> StepResult | Awaitable[Any]: ...


class EnvironmentFailure(RlstreamError):
    """An environment raised, hung past its deadline or returned something malformed.

    Drivers turn it into a graded failure with ``info["error"]``; it never escapes them.
    """

    code = "environment_failure"


def task_id_of(task: Task) -> str:
    """The task's id for reports: ``task_id``, else ``task_key``, else ``""``."""
    for key in ("task_id", "task_key"):
        value = task.get(key)
        if isinstance(value, str | int) and not isinstance(value, bool):
            return str(value)
    return ""
