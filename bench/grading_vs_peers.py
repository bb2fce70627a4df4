"""Grading throughput per core: rlstream rewards vs stateset-agents' on the same conversations.

Conversations come from ``rlstream.sampledata`` (support conversations for customer_support
and tool_calling, maths for gsm8k), with a truth file. Both sides grade the same
conversations in one process; the clock is CPU seconds of the process (one core), best of
``--repeats``. Inputs are built before the clock starts, each in its side's native form:

* rlstream: ``Transcript`` graded by ``grade_one(t, RewardSpec.from_names([reward]), ctx)``
  with the task's reference in ``ctx`` (the same information stateset gets), and by
  ``grade_many`` (the product's batch path: tool_calling derives its reference from the
  group's passing peers instead);
* stateset: ``ConversationTurn`` lists + the context dict its reward reads (gold answer,
  expected tool and parameters, intent), tool calls rendered as the fenced JSON block its
  tool reward parses; graded by ``await reward.compute_reward(turns, ctx)`` in one loop.

A ``+parse`` column also times each side parsing its own serialised input inside the clock
(rlstream ``Transcript.load_json``; stateset ``json.loads`` + ``ConversationTurn``).
Accuracy is the share of conversations whose pass verdict matches the generator's truth
(stateset passes at 0.7, the threshold its curation uses).

    python bench/grading_vs_peers.py --size 4000
"""

from __future__ import annotations

import argparse
import json
import math
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

from _common import header, measure, print_table
from _peers import (
    grade_stateset,
    stateset_available,
    stateset_context,
    stateset_reward,
    stateset_turns,
)
from _sample import DOMAINS, sample
from rlstream.grading import RewardSpec, grade_many, grade_one
from rlstream.rewards import RewardContext
from rlstream.rollout import ScoredRollout
from rlstream.sampledata import Truth
from rlstream.transcript import Transcript

TARGET = 10.0
STATESET_PASS = 0.7


def _rl_context(name: str, t: Transcript, truth: Truth) -> RewardContext:
    task = truth.tasks[truth.conversations[t.conversation_id].task_id]
    if name == "tool_calling":
        return RewardContext(reference=task.reference)
    return RewardContext()


def _rl_grade(spec: RewardSpec, items: Sequence[tuple[Transcript, RewardContext]]) -> list[float]:
    return [grade_one(t, spec, ctx).score for t, ctx in items]


def _rl_grade_json(spec: RewardSpec, items: Sequence[tuple[bytes, RewardContext]]) -> list[float]:
    return [grade_one(Transcript.load_json(b), spec, ctx).score for b, ctx in items]


def _rl_grade_many(spec: RewardSpec, ts: Sequence[Transcript]) -> list[float]:
    return [r.score if isinstance(r, ScoredRollout) else float("nan") for r in grade_many(ts, spec)]


def _stateset_from_json(reward: Any, lines: Sequence[tuple[str, dict[str, Any]]]) -> list[float]:
    from stateset_agents.core.trajectory import ConversationTurn

    items = []
    for line, ctx in lines:
        turns = [ConversationTurn(role=m["role"], content=m["content"]) for m in json.loads(line)]
        items.append((turns, ctx))
    return grade_stateset(reward, items)


def _accuracy(name: str, ts: Sequence[Transcript], verdicts: Sequence[bool], truth: Truth) -> float:
    hits = total = 0
    for t, v in zip(ts, verdicts, strict=True):
        want = truth.conversations[t.conversation_id].expected.get(name)
        if want is None:
            continue
        total += 1
        hits += v == want
    return hits / total if total else float("nan")


def bench_reward(name: str, size: int, seed: int, repeats: int) -> dict[str, Any]:
    s = sample(name, seed=seed, n=size)
    ts, truth = s.transcripts, s.truth
    n = len(ts)
    spec = RewardSpec.from_names([name])
    threshold = spec.items[0].reward.threshold
    items = [(t, _rl_context(name, t, truth)) for t in ts]
    lines = [(t.dump_json(), ctx) for t, ctx in items]
    out: dict[str, Any] = {"reward": name, "n": n}
    out["rl"] = measure(lambda: _rl_grade(spec, items), repeats=repeats)
    out["rl_many"] = measure(lambda: _rl_grade_many(spec, ts), repeats=repeats)
    out["rl_json"] = measure(lambda: _rl_grade_json(spec, lines), repeats=repeats)
    out["rl_acc"] = _accuracy(name, ts, [x >= threshold for x in out["rl"].result], truth)
    out["groups"] = len({t.group_key for t in ts})
    if stateset_available():
        reward = stateset_reward(name)
        ss_items = [
            (
                stateset_turns(t),
                stateset_context(name, truth.tasks[truth.conversations[t.conversation_id].task_id]),
            )
            for t in ts
        ]
        ss_lines = [
            (json.dumps([{"role": x.role, "content": x.content} for x in turns]), ctx)
            for turns, ctx in ss_items
        ]
        out["ss"] = measure(lambda: grade_stateset(reward, ss_items), repeats=repeats)
        out["ss_json"] = measure(lambda: _stateset_from_json(reward, ss_lines), repeats=repeats)
        out["ss_acc"] = _accuracy(name, ts, [x >= STATESET_PASS for x in out["ss"].result], truth)
    return out


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
    results = [
        bench_reward(name, args.size, args.seed, args.repeats)
        for name in args.rewards.split(",")
        if name
    ]
    table = []
    ratios: dict[str, float] = {}
    for r in results:
        n = r["n"]
        rl, many, rl_json = r["rl"], r["rl_many"], r["rl_json"]
        line: list[object] = [r["reward"], n, rl.rate(n), many.rate(n), rl_json.rate(n)]
        if "ss" in r:
            ss, ss_json = r["ss"], r["ss_json"]
            ratios[r["reward"]] = rl.rate(n) / ss.rate(n)
            line += [
                ss.rate(n),
                ss_json.rate(n),
                ratios[r["reward"]],
                many.rate(n) / ss.rate(n),
                rl_json.rate(n) / ss_json.rate(n),
                r["rl_acc"],
                r["ss_acc"],
            ]
        table.append(line)
    headers = ["reward", "convs", "rl grade_one/s", "rl grade_many/s", "rl +parse/s"]
    if ratios:
        headers += [
            "stateset/s",
            "stateset +parse/s",
            "ratio",
            "ratio many",
            "ratio +parse",
            "rl acc",
            "ss acc",
        ]
    print_table(headers, table)
    print("(conversations per CPU second, one core; acc = pass verdict vs generator truth)")
    print()
    if not ratios:
        print("ratio rlstream/stateset: stateset-agents not installed (pip install -e '.[bench]')")
        return
    geo = math.exp(sum(math.log(v) for v in ratios.values()) / len(ratios))
    parts = ", ".join(f"{k} {v:.2f}x" for k, v in ratios.items())
    verdict = "meets" if min(ratios.values()) >= TARGET else "BELOW"
    print(
        f"ratio rlstream/stateset (conv/s per core, grade_one, native input): {parts}; "
        f"geomean {geo:.2f}x ({verdict} target >= {TARGET:.0f}x)"
    )


if __name__ == "__main__":
    main()
