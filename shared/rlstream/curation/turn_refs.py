"""Turn-level references derived from the logs themselves (no model, no labels).

Within one task's group, the *passing* rollouts define, for each conversation state, the
reference next action(s); a *failing* rollout's first divergence from them marks the turn
that went wrong. The rule, and what it cannot see:

* **State**: the ordered tool calls made so far, each canonicalised the way the
  ``tool_calling`` reward compares calls (name + type-normalised arguments). User text and
  tool results are not part of it, so two conversations with different wording but the
  same call history share a state.
* **Action**: an assistant turn's calls in order, or :data:`REPLY` for a turn that only
  talks. A reply does not change the state, so at one state the passing rollouts may both
  reply and call: a reply is "right" wherever a passing rollout also replied there.
* A failing rollout's turn at a state the references cover is ``reference_match`` (1.0) or
  ``divergence`` (0.0, the first one only); every later turn has no reference
  (``after_divergence``): the history never rejoins a passing one.
* Limits: a state no passing rollout reached has no reference (``no_reference``), so a
  group without a passing rollout scores nothing; calls made in a harmless different order
  count as a divergence; a reply's wording is not judged, only that it is a reply.

Measured coverage on tau-bench's airline trajectories is in docs/curation.md.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field

from rlstream.rewards.toolcalls import extract_with_turns, schema_types
from rlstream.rollout import ScoredRollout, TurnScore, TurnSource
from rlstream.transcript import Transcript

#: the action of an assistant turn that makes no tool call
REPLY = "\x00reply"

Action = tuple[str, ...]
State = tuple[str, ...]


@dataclass(frozen=True, slots=True)
class Turn:
    """One assistant turn: where it is, the state before it, what it did."""

    message_index: int
    ordinal: int
    state: State
    action: Action


@dataclass(frozen=True, slots=True)
class Example:
    """A passing rollout's action at a state: its conversation and the turn's message."""

    rollout_id: str
    message_index: int


@dataclass(slots=True)
class References:
    """One task group's table: state -> reference action -> where a passing rollout took it."""

    task_key: str
    table: dict[State, dict[Action, list[Example]]] = field(default_factory=dict)

    def actions(self, state: State) -> tuple[Action, ...]:
        return tuple(self.table.get(state, {}))

    def covers(self, state: State) -> bool:
        return state in self.table


def turns_of(t: Transcript) -> list[Turn]:
    """Every assistant turn of a conversation with its state and action."""
    calls, _ = extract_with_turns(t, schema_types(t.tools))
    by_turn: dict[int, list[str]] = {}
    for c in calls:
        by_turn.setdefault(c.turn, []).append(c.key)
    out: list[Turn] = []
    state: list[str] = []
    ordinal = -1
    for i, m in enumerate(t.messages):
        if m.role != "assistant":
            continue
        ordinal += 1
        keys = by_turn.get(ordinal, [])
        out.append(Turn(i, ordinal, tuple(state), tuple(keys) if keys else (REPLY,)))
        state.extend(keys)
    return out


def derive_references(group: Sequence[ScoredRollout]) -> References:
    """The reference table of one task's group (rollouts of other tasks are refused)."""
    keys = {r.task_key for r in group}
    if len(keys) > 1:
        raise ValueError(f"one task group at a time, got {len(keys)} task keys")
    refs = References(task_key=next(iter(keys), ""))
    for r in group:
        if not r.passed:
            continue
        for turn in turns_of(r.transcript):
            examples = refs.table.setdefault(turn.state, {}).setdefault(turn.action, [])
            examples.append(Example(r.rollout_id, turn.message_index))
    return refs


def _ts(t: Turn, score: float | None, source: TurnSource) -> TurnScore:
    return TurnScore(message_index=t.message_index, turn=t.ordinal, score=score, source=source)


def score_turns(rollout: ScoredRollout, refs: References) -> list[TurnScore]:
    """Per-assistant-turn scores of one rollout against its group's references."""
    turns = turns_of(rollout.transcript)
    if rollout.passed:
        return [_ts(t, 1.0, "passing_rollout") for t in turns]
    out: list[TurnScore] = []
    diverged = False
    for t in turns:
        if diverged:
            out.append(_ts(t, None, "after_divergence"))
        elif not refs.covers(t.state):
            out.append(_ts(t, None, "no_reference"))
        elif t.action in refs.table[t.state]:
            out.append(_ts(t, 1.0, "reference_match"))
        else:
            diverged = True
            out.append(_ts(t, 0.0, "divergence"))
    return out


def with_turn_scores(rollouts: Sequence[ScoredRollout]) -> list[ScoredRollout]:
    """The rollouts (any mix of tasks, order kept) with ``turns`` scored against the passing
    rollouts of their own task among them."""
    groups: dict[str, list[ScoredRollout]] = {}
    for r in rollouts:
        groups.setdefault(r.task_key, []).append(r)
    refs = {k: derive_references(g) for k, g in groups.items()}
    return [
        r.model_copy(update={"turns": tuple(score_turns(r, refs[r.task_key]))}) for r in rollouts
    ]


def first_divergence(rollout: ScoredRollout, refs: References) -> Turn | None:
    """The failing rollout's turn that left every passing path, if the references see it."""
    if rollout.passed:
        return None
    for t in turns_of(rollout.transcript):
        if not refs.covers(t.state):
            return None
        if t.action not in refs.table[t.state]:
            return t
    return None


@dataclass(frozen=True, slots=True)
class Coverage:
    """How much of a set of groups the derived references can grade."""

    groups: int
    groups_with_pass: int
    turns: int
    failing_turns: int
    failing_turns_scored: int
    failing_rollouts: int
    divergences_located: int

    @property
    def failing_turn_coverage(self) -> float:
        return self.failing_turns_scored / self.failing_turns if self.failing_turns else 0.0

    @property
    def divergence_rate(self) -> float:
        return self.divergences_located / self.failing_rollouts if self.failing_rollouts else 0.0


def coverage(groups: Iterable[Sequence[ScoredRollout]]) -> Coverage:
    """Coverage of the references over groups (each one task's rollouts)."""
    n_groups = with_pass = turns = f_turns = f_scored = f_rollouts = located = 0
    for group in groups:
        n_groups += 1
        refs = derive_references(group)
        with_pass += bool(refs.table)
        for r in group:
            scores = score_turns(r, refs)
            turns += len(scores)
            if r.passed:
                continue
            f_rollouts += 1
            f_turns += len(scores)
            f_scored += sum(s.score is not None for s in scores)
            located += any(s.source == "divergence" for s in scores)
    return Coverage(n_groups, with_pass, turns, f_turns, f_scored, f_rollouts, located)
