"""``replay``: user turns and tool results replayed from a task's logged trajectories.

No simulator and no model: the environment can only say what the logs said.

* **State** is the canonical tool-call history so far, exactly as
  :mod:`rlstream.curation.turn_refs` defines it (name + type-normalised arguments; a turn
  that only talks is a reply and does not change it).
* **Answer.** At a state, an assistant turn whose action (its calls in order, or a reply)
  some logged trajectory also took *at the same state* gets the messages that trajectory
  got next: the tool results of those calls, or the user's next turn after a reply (up to
  its next assistant turn). Tool results keep their logged content; only their
  ``tool_call_id`` is renamed to the episode's call ids.
* **Which trajectory.** Among the logged turns that match, those continuing a trajectory
  the episode has been following (the previous step matched its previous turn) win, so a
  run of replies at one state walks the log's user turns in order; then the smallest
  rollout id: deterministic.
* **Off the log.** An action no trajectory took at that state ends the episode with an
  explicit ``not in the log`` tool result per call (no message for a reply),
  ``info["off_log"] = True`` and reward None: not a failure, just ungradeable. Nothing is
  ever invented.
* **Reward**: when the matched turn is the followed trajectory's last assistant turn the
  episode is done: 1.0 if that trajectory passed, 0.0 if it failed. Before that None.

Limits: two rollouts that pass by different call orders are two paths; a logged state
reached with different wording replays the other conversation's user text; a state the
logs never reached cannot be replayed (the episode is off-log, counted apart).
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path
from typing import Any

from rlstream.curation.turn_refs import REPLY, Action, State, Turn, turns_of
from rlstream.environments.base import StepResult, Task, Tools
from rlstream.errors import ConfigError, InputError
from rlstream.rollout import ScoredRollout
from rlstream.transcript import Message, Transcript

NOT_IN_LOG = "not in the log: no logged trajectory made this call at this point"


@dataclass(frozen=True, slots=True)
class _Logged:
    rollout: ScoredRollout
    turns: tuple[Turn, ...]


@dataclass(slots=True)
class _Group:
    logged: list[_Logged]
    table: dict[State, dict[Action, list[tuple[int, int]]]]


def _group(rollouts: Sequence[ScoredRollout]) -> _Group:
    logged = [
        _Logged(r, tuple(turns_of(r.transcript)))
        for r in sorted(rollouts, key=lambda r: r.rollout_id)
    ]
    logged = [g for g in logged if g.turns]
    table: dict[State, dict[Action, list[tuple[int, int]]]] = {}
    for i, g in enumerate(logged):
        for k, t in enumerate(g.turns):
            table.setdefault(t.state, {}).setdefault(t.action, []).append((i, k))
    return _Group(logged, table)


def _grade(transcripts: Iterable[Transcript], spec: str) -> list[ScoredRollout]:
    from rlstream.grading import GradeFailure, RewardSpec, grade_many

    return [
        r
        for r in grade_many(transcripts, RewardSpec.parse(spec))
        if not isinstance(r, GradeFailure)
    ]


@lru_cache(maxsize=8)
def _load(path: str, mtime_ns: int, spec: str) -> tuple[ScoredRollout, ...]:
    """A log file read and graded once per process (every episode makes an instance)."""
    from rlstream.ingest.ingestor import ingest_paths
    from rlstream.ingest.models import IngestOptions

    ts = [t for t in ingest_paths([path], IngestOptions(redact=False)) if isinstance(t, Transcript)]
    return tuple(_grade(ts, spec))


class ReplayEnvironment:
    """Replays a group of logged rollouts per task key (see the module docstring).

    Build it from graded ``rollouts``, from ``transcripts`` graded with ``reward`` (default
    ``outcome``: the logged task reward), or from a ``logs`` file any ingest format reads.
    A task is ``{"task_key": ...}`` (or ``{"task_id": 12}`` for ``task_id:12``), optionally
    with ``"opening"``: the rollout id whose opening messages to show.
    """

    def __init__(
        self,
        logs: str | Path | None = None,
        rollouts: Sequence[ScoredRollout] | None = None,
        transcripts: Sequence[Transcript] | None = None,
        reward: str = "outcome",
    ) -> None:
        found: list[ScoredRollout] = list(rollouts or ())
        if transcripts:
            found += _grade(transcripts, reward)
        if logs is not None:
            p = Path(logs)
            if not p.is_file():
                raise ConfigError(f"replay: no log file at {p}")
            found += _load(str(p), p.stat().st_mtime_ns, reward)
        if not found:
            raise ConfigError("replay needs logged rollouts (logs=, rollouts= or transcripts=)")
        by_task: dict[str, list[ScoredRollout]] = {}
        for r in found:
            by_task.setdefault(r.task_key, []).append(r)
        self._rollouts = by_task
        self._groups: dict[str, _Group] = {}
        self._g: _Group | None = None
        self._state: State = ()
        self._alive: set[tuple[int, int]] = set()
        self._tools: Tools = []

    @property
    def task_keys(self) -> list[str]:
        return sorted(self._rollouts)

    def _group_of(self, task: Task) -> _Group:
        key = task.get("task_key")
        if key is None and task.get("task_id") is not None:
            key = f"task_id:{task['task_id']}"
        if not isinstance(key, str) or key not in self._rollouts:
            raise InputError(f"replay: no logged trajectories for task {key!r}")
        if key not in self._groups:
            self._groups[key] = _group(self._rollouts[key])
        group = self._groups[key]
        if not group.logged:
            raise InputError(f"replay: task {key!r} has no logged assistant turn")
        return group

    def reset(self, task: Task) -> tuple[list[Message], Tools]:
        g = self._group_of(task)
        ids = [lg.rollout.rollout_id for lg in g.logged]
        opening = task.get("opening")
        first = ids.index(opening) if opening in ids else 0
        chosen = g.logged[first]
        self._g, self._state, self._alive = g, (), {(first, 0)}
        self._tools = [dict(t) for t in chosen.rollout.transcript.tools]
        msgs = chosen.rollout.transcript.messages[: chosen.turns[0].message_index]
        return list(msgs), self._tools

    def step(self, message: Message) -> StepResult:
        if self._g is None:
            raise InputError("replay: step before reset")
        probe = Transcript(conversation_id="replay", messages=(message,), tools=tuple(self._tools))
        action = turns_of(probe)[0].action
        matches = self._g.table.get(self._state, {}).get(action, [])
        if not matches:
            return self._off_log(message, action)
        g = self._g
        # a trajectory the episode has been following continues it; else any that matches
        base = [m for m in matches if m in self._alive] or matches
        i, k = min(base, key=lambda m: (g.logged[m[0]].rollout.rollout_id, m[1]))
        logged = g.logged[i]
        self._alive = {(j, n + 1) for j, n in base}
        if action != (REPLY,):
            self._state = (*self._state, *action)
        done = k == len(logged.turns) - 1
        reward = (1.0 if logged.rollout.passed else 0.0) if done else None
        info = {"off_log": False, "followed": logged.rollout.rollout_id, "logged_turn": k}
        return StepResult(_answer(logged, k, message), done, reward, info)

    def _off_log(self, message: Message, action: Action) -> StepResult:
        out = tuple(
            Message(role="tool", content=NOT_IN_LOG, tool_call_id=c.id, name=c.name, is_error=True)
            for c in message.tool_calls
        )
        info: dict[str, Any] = {"off_log": True, "state_calls": len(self._state)}
        info["action"] = "reply" if action == (REPLY,) else "call"
        return StepResult(out, True, None, info)


def _answer(logged: _Logged, k: int, message: Message) -> tuple[Message, ...]:
    """The logged messages after turn ``k`` up to the next assistant turn, tool call ids
    renamed to the episode's (matched by position in the logged assistant message)."""
    msgs = logged.rollout.transcript.messages
    start = logged.turns[k].message_index
    end = logged.turns[k + 1].message_index if k + 1 < len(logged.turns) else len(msgs)
    logged_ids = [c.id for c in msgs[start].tool_calls]
    mine = [c.id for c in message.tool_calls]
    rename = {a: b for a, b in zip(logged_ids, mine, strict=False) if a is not None}
    out = []
    for m in msgs[start + 1 : end]:
        if m.role == "tool" and m.tool_call_id in rename:
            m = m.model_copy(update={"tool_call_id": rename[m.tool_call_id]})
        out.append(m)
    return tuple(out)
