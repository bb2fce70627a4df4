"""Turn-level references (rlstream.curation.turn_refs) on tau-bench's logged trajectories.

tau-bench (sierra-research/tau-bench, MIT) ships ``historical_trajectories/*.json``: a tool
agent with a simulated customer, several trials per task, a task reward, and each task's
ground-truth actions. This measures, on logs nobody on this project wrote:

* coverage: the share of failing rollouts' turns the derived references can score, and the
  share of failing rollouts whose first divergence they locate;
* agreement with the ground truth at each located divergence: is the rejected turn a
  database write that no ground-truth action equals (a real mistake), a read, a reply, a
  write the ground truth also makes (the rule blamed a right call), and is the chosen
  turn consistent with the ground truth (a ground-truth write, a read or a reply)?

    git show <tau-bench commit>:historical_trajectories/gpt-4o-airline.json > /tmp/a.json
    .venv/bin/python bench/turn_refs_tau.py /tmp/a.json
"""

from __future__ import annotations

import argparse
import collections
import json
import tempfile
from pathlib import Path
from typing import Any

from rlstream.curation.turn_refs import REPLY, coverage, derive_references, first_divergence
from rlstream.curation.turn_rows import turn_profile
from rlstream.ingest.ingestor import ingest_paths
from rlstream.ingest.models import IngestOptions
from rlstream.rewards.toolcalls import call_key, canon_args
from rlstream.rollout import ScoredRollout
from rlstream.transcript import Transcript

#: tau-bench's airline and retail tools that change the database
WRITES = frozenset(
    {
        "book_reservation", "cancel_reservation", "update_reservation_baggages",
        "update_reservation_flights", "update_reservation_passengers", "send_certificate",
        "cancel_pending_order", "exchange_delivered_order_items", "modify_pending_order_address",
        "modify_pending_order_items", "modify_pending_order_payment", "modify_user_address",
        "return_delivered_order_items", "transfer_to_human_agents",
    }
)  # fmt: skip


def load(path: Path) -> tuple[list[list[ScoredRollout]], dict[str, set[str]]]:
    """Groups of rollouts per task, and each task's ground-truth call keys."""
    entries = json.loads(path.read_text())
    gt: dict[str, set[str]] = {}
    with tempfile.NamedTemporaryFile("w", suffix=".jsonl", delete=False) as fh:
        for e in entries:
            key = f"task_id:{e['task_id']}"
            actions = (e.get("info") or {}).get("task", {}).get("actions", [])
            gt[key] = {call_key(a["name"], canon_args(a["name"], a["kwargs"], {})) for a in actions}
            row = {
                "id": f"{path.stem}-{e['task_id']}-{e['trial']}",
                "messages": e["traj"],
                "metadata": {"task_id": e["task_id"], "trial": e["trial"]},
                "outcome": {"reward": e["reward"]},
            }
            fh.write(json.dumps(row) + "\n")
    run = ingest_paths([Path(fh.name)], IngestOptions(redact=False, dedupe=False))
    groups: dict[str, list[ScoredRollout]] = collections.defaultdict(list)
    for t in run:
        if not isinstance(t, Transcript):
            continue
        passed = float(t.outcome.get("reward") or 0.0) >= 1.0  # type: ignore[arg-type]
        r = ScoredRollout(
            rollout_id=t.conversation_id, transcript=t, results=(), score=float(passed),
            passed=passed, reward_spec="outcome",
        )  # fmt: skip
        groups[r.task_key].append(r)
    Path(fh.name).unlink()
    return list(groups.values()), gt


def kind(action: tuple[str, ...], truth: set[str]) -> str:
    if action == (REPLY,):
        return "reply"
    names = {k.split("\x00", 1)[0] for k in action}
    if not names & WRITES:
        return "read"
    return "write in ground truth" if set(action) <= truth else "write not in ground truth"


def main(argv: list[str] | None = None) -> dict[str, Any]:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("trajectories", type=Path, help="a tau-bench historical_trajectories JSON")
    a = ap.parse_args(argv)
    groups, gt = load(a.trajectories)
    cov = coverage(groups)
    prof = turn_profile(groups)
    rejected: collections.Counter[str] = collections.Counter()
    chosen: collections.Counter[str] = collections.Counter()
    for g in groups:
        refs = derive_references(g)
        truth = gt.get(refs.task_key, set())
        for r in g:
            turn = first_divergence(r, refs)
            if turn is None:
                continue
            rejected[kind(turn.action, truth)] += 1
            for action in refs.actions(turn.state):
                chosen[kind(action, truth)] += 1
    out = {
        "rollouts": sum(len(g) for g in groups),
        "tasks": cov.groups,
        "tasks_with_a_pass": cov.groups_with_pass,
        "failing_rollouts": cov.failing_rollouts,
        "failing_turns": cov.failing_turns,
        "failing_turn_coverage": round(cov.failing_turn_coverage, 3),
        "divergences_located": cov.divergences_located,
        "divergence_rate": round(cov.divergence_rate, 3),
        "rejected_at_divergence": dict(rejected),
        "chosen_at_divergence": dict(chosen),
        "turn_states": prof.states,
        "turn_gradient_support": round(prof.gradient_support, 3),
        "rows": {"sft": prof.sft_rows, "dpo": prof.dpo_rows, "heldout": prof.heldout_rows},
    }
    print(json.dumps(out, indent=2))
    return out


if __name__ == "__main__":
    main()
