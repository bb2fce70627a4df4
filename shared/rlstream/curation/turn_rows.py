"""Turn-level rows from a task group and its derived references (:mod:`turn_refs`).

* SFT: a passing rollout's prefix up to one assistant turn, the loss on that turn only.
* DPO: at a failing rollout's first divergence, the same prefix (the failing rollout's own
  messages) with ``chosen`` = the action passing rollouts took at that state and
  ``rejected`` = the failing turn. Both sides come from one task and one state by
  construction; :func:`dpo_turn_rows` checks it anyway.
* Held-out next-action prompts: a passing prefix ending before a call turn, with the calls
  passing rollouts made there as the ``tool_calling`` reference.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import orjson

from rlstream.curation.records import Row, message_json, pair_policy
from rlstream.curation.turn_refs import (
    REPLY,
    Action,
    Example,
    References,
    State,
    derive_references,
    first_divergence,
    turns_of,
)
from rlstream.rollout import ScoredRollout
from rlstream.transcript import Message


def _by_id(group: Sequence[ScoredRollout]) -> dict[str, ScoredRollout]:
    return {r.rollout_id: r for r in group}


def _preferred(refs: References, state: State) -> tuple[Action, Example]:
    """The action most passing rollouts took at a state (ties: the first in sort order),
    with its first example by rollout id: deterministic whatever the input order."""
    options = refs.table[state]
    action = min(options, key=lambda a: (-len(options[a]), a))
    return action, min(options[action], key=lambda e: (e.rollout_id, e.message_index))


def sft_turn_rows(group: Sequence[ScoredRollout]) -> list[Row]:
    """One row per assistant turn of each passing rollout (loss on that turn only)."""
    rows: list[Row] = []
    for r in sorted(group, key=lambda r: r.rollout_id):
        if not r.passed:
            continue
        msgs = r.transcript.messages
        for t in turns_of(r.transcript):
            body = [message_json(m) for m in msgs[: t.message_index + 1]]
            rows.append(
                {
                    "messages": body,
                    "loss_mask": [0] * (len(body) - 1) + [1],
                    "task_key": r.task_key,
                    "rollout_id": r.rollout_id,
                    "turn": t.ordinal,
                    "state_calls": len(t.state),
                    "policy_version": r.transcript.policy_version,
                    "policy": r.policy,
                }
            )
    return rows


def dpo_turn_rows(group: Sequence[ScoredRollout], refs: References) -> list[Row]:
    """One pair per failing rollout whose first divergence the references locate."""
    by_id = _by_id(group)
    rows: list[Row] = []
    for r in sorted(group, key=lambda r: r.rollout_id):
        turn = first_divergence(r, refs)
        if turn is None:
            continue
        _, ex = _preferred(refs, turn.state)
        chosen = by_id[ex.rollout_id]
        if chosen.task_key != r.task_key:
            raise ValueError("a divergence pair across task groups")
        chosen_turn = next(
            t for t in turns_of(chosen.transcript) if t.message_index == ex.message_index
        )
        if chosen_turn.state != turn.state:
            raise ValueError("a divergence pair across different prefixes")
        msgs = r.transcript.messages
        rows.append(
            {
                "prompt": [message_json(m) for m in msgs[: turn.message_index]],
                "chosen": [message_json(chosen.transcript.messages[ex.message_index])],
                "rejected": [message_json(msgs[turn.message_index])],
                "task_key": r.task_key,
                "turn": turn.ordinal,
                "state_calls": len(turn.state),
                "chosen_rollout_id": chosen.rollout_id,
                "rejected_rollout_id": r.rollout_id,
                "policy_version": r.transcript.policy_version,
                "policy": pair_policy(chosen, r),
            }
        )
    return rows


def _calls(message: Message) -> list[dict[str, Any]]:
    return [
        {"name": c.name, "arguments": c.arguments if c.arguments is not None else c.raw_arguments}
        for c in message.tool_calls
    ]


def heldout_turn_rows(group: Sequence[ScoredRollout], refs: References) -> list[Row]:
    """One next-action prompt per state where passing rollouts made a call."""
    by_id = _by_id(group)
    rows: list[Row] = []
    for state in sorted(refs.table):
        action, ex = _preferred(refs, state)
        if action == (REPLY,):
            continue
        r = by_id[ex.rollout_id]
        msgs = r.transcript.messages
        label = {
            "task_key": r.task_key,
            "expected_tool_calls": _calls(msgs[ex.message_index]),
            "alternatives": len(refs.table[state]),
            "reference_rollout_id": r.rollout_id,
        }
        rows.append(
            {
                "prompt": [message_json(m) for m in msgs[: ex.message_index]],
                "label": orjson.dumps(label, option=orjson.OPT_SORT_KEYS).decode(),
                "task_key": r.task_key,
                "agent": r.transcript.agent or "",
                "reward_spec": "tool_calling",
                "state_calls": len(state),
                "tools": list(r.transcript.tools),
            }
        )
    return rows


@dataclass(frozen=True, slots=True)
class TurnProfile:
    """Gradient support at the turn level: the states DPO can learn from."""

    states: int
    states_with_divergence: int
    sft_rows: int
    dpo_rows: int
    heldout_rows: int

    @property
    def gradient_support(self) -> float:
        return self.states_with_divergence / self.states if self.states else 0.0


def turn_profile(groups: Sequence[Sequence[ScoredRollout]]) -> TurnProfile:
    states = div_states = sft = dpo = held = 0
    for g in groups:
        refs = derive_references(g)
        states += len(refs.table)
        div_states += len({t.state for r in g if (t := first_divergence(r, refs)) is not None})
        sft += len(sft_turn_rows(g))
        dpo += len(dpo_turn_rows(g, refs))
        held += len(heldout_turn_rows(g, refs))
    return TurnProfile(states, div_states, sft, dpo, held)
