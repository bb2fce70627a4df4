"""Grading throughput per core: rlstream rewards vs stateset-agents' on the same conversations.

For each reward both sides grade the same seeded transcripts (``_sample.transcripts``) in one
process, one core (CPU seconds of the process, best of ``--repeats``):

* **native**: each side gets its own in-memory input, built before the clock starts:
  rlstream ``Transcript`` + ``RewardContext``; stateset ``ConversationTurn`` list + context
  dict (the label turned into the keys its reward reads, tool calls rendered as the fenced
  JSON block its tool reward parses).
* **from JSONL**: each side also parses its own serialised input inside the clock: rlstream
  ``Transcript.load_json`` on the canonical JSON; stateset ``json.loads`` + one
  ``ConversationTurn`` per message, which is what its ingest produces.

The last line prints ``ratio rlstream/stateset`` per reward (native), and the geometric mean.

    python bench/grading_vs_peers.py --size 4000
"""

from __future__ import annotations

import argparse
import json
import math
import sys
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

from _common import Timing, header, measure, print_table
from _peers import (
    grade_stateset,
    stateset_available,
    stateset_context,
    stateset_reward,
    stateset_turns,
)
from _sample import DOMAINS, transcripts
from rlstream.rewards import RewardContext
from rlstream.transcript import Transcript

TARGET = 10.0


def rlstream_grader(
    name: str,
) -> Callable[[Sequence[tuple[Transcript, RewardContext]]], list[float]]:
    """The rlstream side: one reward instance from the registry, called per transcript."""
    from rlstream.rewards.registry import get_reward

    reward = get_reward(name)

    def grade(items: Sequence[tuple[Transcript, RewardContext]]) -> list[float]:
        return [reward(t, ctx).score for t, ctx in items]

    return grade


def _context(t: Transcript) -> RewardContext:
    return RewardContext(label=t.label)


def _stateset_from_jsonl(reward: Any, lines: Sequence[tuple[str, dict[str, Any]]]) -> list[float]:
    from stateset_agents.core.trajectory import ConversationTurn

    items = []
    for line, ctx in lines:
        turns = [ConversationTurn(role=m["role"], content=m["content"]) for m in json.loads(line)]
        items.append((turns, ctx))
    return grade_stateset(reward, items)


def _stateset_line(turns: Sequence[Any]) -> str:
    return json.dumps([{"role": t.role, "content": t.content} for t in turns])


def bench_reward(name: str, size: int, seed: int, repeats: int) -> dict[str, Any]:
    ts = transcripts(name, seed=seed, n_tasks=max(1, size // 8), rollouts_per_task=8)
    n = len(ts)
    rl_items = [(t, _context(t)) for t in ts]
    rl_lines = [(t.dump_json(), _context(t)) for t in ts]
    grade = rlstream_grader(name)
    rl = measure(lambda: grade(rl_items), repeats=repeats)
    rl_json = measure(
        lambda: grade([(Transcript.load_json(b), c) for b, c in rl_lines]), repeats=repeats
    )
    row: dict[str, Any] = {"reward": name, "n": n, "rl": rl, "rl_json": rl_json}
    if stateset_available():
        reward = stateset_reward(name)
        ss_items = [(stateset_turns(t), stateset_context(name, t, t.label)) for t in ts]
        ss_lines = [(_stateset_line(turns), ctx) for turns, ctx in ss_items]
        row["ss"] = measure(lambda: grade_stateset(reward, ss_items), repeats=repeats)
        row["ss_json"] = measure(lambda: _stateset_from_jsonl(reward, ss_lines), repeats=repeats)
    return row


def _mean(t: Timing) -> float:
    scores = t.result or []
    return sum(scores) / len(scores) if scores else float("nan")


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--size", type=int, default=4000, help="conversations per reward")
    parser.add_argument("--seed", type=int, default=7)
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--rewards", default=",".join(DOMAINS))
    args = parser.parse_args()
    header("grading throughput per core: rlstream vs stateset-agents (same conversations)")
    names = [r for r in args.rewards.split(",") if r]
    results = [bench_reward(name, args.size, args.seed, args.repeats) for name in names]
    table = []
    ratios: dict[str, float] = {}
    for r in results:
        n = r["n"]
        line: list[object] = [r["reward"], n, r["rl"].rate(n), r["rl_json"].rate(n)]
        if "ss" in r:
            ratios[r["reward"]] = r["rl"].rate(n) / r["ss"].rate(n)
            line += [
                r["ss"].rate(n),
                r["ss_json"].rate(n),
                ratios[r["reward"]],
                r["rl_json"].rate(n) / r["ss_json"].rate(n),
                _mean(r["rl"]),
                _mean(r["ss"]),
            ]
        table.append(line)
    headers = ["reward", "convs", "rlstream conv/s", "rlstream+parse conv/s"]
    if ratios:
        headers += [
            "stateset conv/s",
            "stateset+parse conv/s",
            "ratio",
            "ratio+parse",
            "rl mean",
            "ss mean",
        ]
    print_table(headers, table)
    print()
    if not ratios:
        print("ratio rlstream/stateset: stateset-agents not installed (pip install -e '.[bench]')")
        return
    geo = math.exp(sum(math.log(v) for v in ratios.values()) / len(ratios))
    parts = ", ".join(f"{k} {v:.2f}x" for k, v in ratios.items())
    verdict = "meets" if min(ratios.values()) >= TARGET else "below"
    print(
        f"ratio rlstream/stateset (conv/s per core, native input): {parts}; geomean {geo:.2f}x ({verdict} target >= {TARGET:.0f}x)"
    )


if __name__ == "__main__":
    main()
