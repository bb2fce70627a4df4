"""Dataset files at the turn level, for multi-turn tool agents (:mod:`turn_refs`).

A conversation-level row of a real agent log is thousands of tokens, its DPO pairs share
no prompt, and its held-out prompt (the first user turn) can only be graded by the logged
outcome, which cannot grade a fresh sample. At the turn level the same logs give SFT rows
of one passing turn each, DPO pairs that share their prefix, and next-action prompts the
``tool_calling`` reward grades against the passing calls.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any, Literal

from rlstream.curation.curate import CurationResult
from rlstream.curation.turn_refs import (
    REPLY,
    coverage,
    derive_references,
    first_divergence,
    turns_of,
)
from rlstream.curation.turn_rows import dpo_turn_rows, heldout_turn_rows, sft_turn_rows
from rlstream.rollout import ScoredRollout

Granularity = Literal["conversation", "turn"]
Row = dict[str, Any]


def is_multi_turn(r: ScoredRollout) -> bool:
    """Tool calls in two or more assistant turns: an agent whose next call depends on the
    results of the last (one lookup then an answer is still a conversation-level task)."""
    return sum(t.action != (REPLY,) for t in turns_of(r.transcript)) >= 2


def resolve_granularity(result: CurationResult) -> Granularity:
    """The option, or for ``auto``: turns when most clean rollouts are multi-turn."""
    chosen = result.options.granularity
    if chosen != "auto":
        return chosen
    pool = [r for g in result.kept for r in g.rollouts] + list(result.sft_pool)
    pool += [r for g in result.heldout for r in g.rollouts]
    if not pool:
        return "conversation"
    return "turn" if 2 * sum(map(is_multi_turn, pool)) > len(pool) else "conversation"


def _groups(rollouts: Iterable[ScoredRollout]) -> list[list[ScoredRollout]]:
    by: dict[str, list[ScoredRollout]] = defaultdict(list)
    for r in rollouts:
        by[r.task_key].append(r)
    return [sorted(by[k], key=lambda r: r.rollout_id) for k in sorted(by)]


@dataclass(frozen=True, slots=True)
class TurnFiles:
    """Rows with the rollouts each came from (for lineage), and the turn-level profile."""

    sft: list[tuple[Row, tuple[ScoredRollout, ...]]]
    dpo: list[tuple[Row, tuple[ScoredRollout, ...]]]
    heldout: list[Row]
    profile: dict[str, float | int]


def turn_files(result: CurationResult) -> TurnFiles:
    """SFT turns of the passing pool, DPO pairs of the kept groups, next-action held-out
    prompts of the held-out groups."""
    sft: list[tuple[Row, tuple[ScoredRollout, ...]]] = []
    for group in _groups(result.sft_pool):
        by_id = {r.rollout_id: r for r in group}
        sft += [(row, (by_id[row["rollout_id"]],)) for row in sft_turn_rows(group)]
    dpo: list[tuple[Row, tuple[ScoredRollout, ...]]] = []
    states = div_states = 0
    for g in result.kept:
        refs = derive_references(g.rollouts)
        states += len(refs.table)
        div_states += len(
            {t.state for r in g.rollouts if (t := first_divergence(r, refs)) is not None}
        )
        by_id = {r.rollout_id: r for r in g.rollouts}
        for row in dpo_turn_rows(g.rollouts, refs):
            pair = (by_id[row["chosen_rollout_id"]], by_id[row["rejected_rollout_id"]])
            dpo.append((row, pair))
    heldout: list[Row] = []
    for g in result.heldout:
        heldout += heldout_turn_rows(g.rollouts, derive_references(g.rollouts))
    cov = coverage(g.rollouts for g in result.kept)
    profile: dict[str, float | int] = {
        "states": states,
        "states_with_divergence": div_states,
        "gradient_support": round(div_states / states, 6) if states else 0.0,
        "failing_rollouts": cov.failing_rollouts,
        "divergences_located": cov.divergences_located,
        "failing_turn_coverage": round(cov.failing_turn_coverage, 6),
    }
    return TurnFiles(sft, dpo, heldout, profile)
