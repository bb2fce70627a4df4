"""``tau-airline``: tau-bench's airline domain as a ``python`` environment.

Whole-task episodes on third-party tasks: the 50 test tasks of tau-bench's airline domain
(sierra-research/tau-bench, MIT), each with its user's instruction and ground-truth actions,
over the domain's database (500 users, 2,000 reservations, 300 flights), shipped gzipped in
``data/airline.json.gz`` (built by ``tools/tau_bench/convert_airline.py``).

* **Task**: ``{"task_id": N}`` or a task key ``task_id:N`` (how tau-bench logs ingest).
* **User**: the opening user turn is the task's instruction, verbatim; a reply without a
  tool call is answered with ``followups`` (default: one "yes", so a model that asks for the
  confirmation the policy requires gets it), then the episode ends. tau-bench simulates the
  user with an LLM instead; this user knows everything at once and never improvises.
* **Reward**: 1.0 when the database equals the one the ground-truth actions leave, as in
  tau-bench. tau-bench also requires a task's ``outputs`` (facts the agent must say, 8 of
  the 50 tasks) to appear in the agent's replies; this environment does not check them, so
  on those tasks it can score 1 where tau-bench scores 0 (measured in docs/environments.md).
"""

from __future__ import annotations

import copy
import gzip
import re
from collections.abc import Mapping, Sequence
from functools import cache
from pathlib import Path
from typing import Any

import orjson

from rlstream.environments.base import StepResult, Task, Tools
from rlstream.environments.python_env import Domain, PythonEnvironment
from rlstream.environments.tau_airline.tools import TOOLS
from rlstream.errors import ConfigError, InputError
from rlstream.transcript import Message

DATA = Path(__file__).parent / "data" / "airline.json.gz"
_TASK_KEY = re.compile(r"task_id:(\d+)$")


@cache
def load_data(path: str = str(DATA)) -> dict[str, Any]:
    """The database, policy and tasks (read once per process and path)."""
    try:
        raw = Path(path).read_bytes()
        data: dict[str, Any] = orjson.loads(gzip.decompress(raw) if path.endswith(".gz") else raw)
    except (OSError, ValueError) as exc:
        raise ConfigError(f"tau-airline data {path}: {exc}") from exc
    missing = {"policy", "users", "reservations", "flights", "tasks"} - set(data)
    if missing:
        raise ConfigError(f"tau-airline data {path}: missing {', '.join(sorted(missing))}")
    return data


def initial_state(data: Mapping[str, Any]) -> dict[str, Any]:
    """A fresh copy of the database tools act on."""
    return copy.deepcopy({k: data[k] for k in ("users", "reservations", "flights")})


def airline_domain(path: str = str(DATA)) -> Domain:
    data = load_data(path)
    return Domain.of("tau-airline", list(TOOLS), lambda: initial_state(data), data["policy"])


def task_id_of(task: Mapping[str, Any]) -> int:
    """``task_id`` or the number in a ``task_id:N`` task key (InputError otherwise)."""
    tid = task.get("task_id")
    if tid is None:
        m = _TASK_KEY.search(str(task.get("task_key", "")))
        tid = m.group(1) if m else None
    try:
        return int(str(tid))
    except ValueError:
        raise InputError(
            f"tau-airline task needs task_id or a task_id:N key, got {dict(task)}"
        ) from None


class TauAirlineEnvironment:
    """One tau-bench airline task at a time (see the module docstring)."""

    def __init__(self, data: str = str(DATA), followups: Sequence[str] | str = ("yes",)) -> None:
        self._data = load_data(str(data))
        self._followups = [followups] if isinstance(followups, str) else list(followups)
        self._env = PythonEnvironment(airline_domain(str(data)))

    def task(self, task_id: int) -> dict[str, Any]:
        """The task's instruction, actions and outputs, ready for :meth:`reset`."""
        tasks = self._data["tasks"]
        if not 0 <= task_id < len(tasks):
            raise InputError(f"tau-airline has tasks 0..{len(tasks) - 1}, not {task_id}")
        return dict(tasks[task_id])

    def reset(self, task: Task) -> tuple[list[Message], Tools]:
        full = self.task(task_id_of(task))
        full["followups"] = list(self._followups)
        return self._env.reset(full)

    def step(self, message: Message) -> StepResult:
        return self._env.step(message)

    @property
    def state(self) -> dict[str, Any]:
        return self._env.state
