"""Curation of one very large group: near-duplicate removal must stay linear.

    .venv/bin/python bench/curate_group.py [--n 50000] [--sizes 12500,25000,50000] [--dups 0.1]
                                           [--repeats 3]

One task with ``n`` graded rollouts (half pass), each a random 40-word reply from a
300-word vocabulary, with a share ``--dups`` of them a one-word edit of an earlier reply
(same outcome): those, and only those, must be dropped as near duplicates. Each size runs
in a fresh process: ``curate`` is timed ``--repeats`` times (median CPU and wall seconds; CPU
is what counts on a shared machine), with the garbage collector on as in real use, and the
process's peak RSS is compared with its RSS once the input is built. The last line gives
the largest size's time and memory, the dropped count against the planted count, and the
time ratio per doubling (linear ~2).
"""

from __future__ import annotations

import argparse
import gc
import itertools
import json
import os
import random
import resource
import statistics
import subprocess
import sys
import time
from typing import Any

from rlstream.curation import CurateOptions, curate
from rlstream.rewards import RewardResult
from rlstream.rollout import ScoredRollout
from rlstream.transcript import Message, Transcript

VOCAB_RNG = random.Random(1)
WORDS = [
    "".join(VOCAB_RNG.choice("abcdefghijklmnopqrstuvwxyz") for _ in range(6)) for _ in range(300)
]


def _rollout(i: int, passed: bool, reply: str) -> ScoredRollout:
    conv = f"big-{i}"
    t = Transcript(
        conversation_id=conv,
        task_key="one-big-task",
        messages=(
            Message(role="user", content="Help me with the big task."),
            Message(role="assistant", content=reply),
        ),
    )
    s = 1.0 if passed else 0.0
    res = RewardResult(reward="outcome", version="1", score=s, passed=passed, threshold=0.5)
    return ScoredRollout(
        rollout_id=ScoredRollout.make_id(conv, "outcome"),
        transcript=t,
        results=(res,),
        score=s,
        passed=passed,
        reward_spec="outcome",
    )


def build(n: int, dup_share: float, seed: int = 0) -> tuple[list[ScoredRollout], int]:
    """``n`` rollouts of one task and the number of planted near duplicates among them."""
    rng = random.Random(seed)
    rows: list[ScoredRollout] = []
    replies: list[tuple[str, bool]] = []
    planted = 0
    for i in range(n):
        if replies and rng.random() < dup_share:
            base, passed = rng.choice(replies)
            words = base.split()
            words[rng.randrange(len(words))] = rng.choice(WORDS)  # one word changed
            reply = " ".join(words)
            planted += 1
        else:
            reply = " ".join(rng.choice(WORDS) for _ in range(40))
            passed = i % 2 == 0
            replies.append((reply, passed))
        rows.append(_rollout(i, passed, reply))
    return rows, planted


def _rss_mb() -> float:
    """Current resident set size (Linux /proc), MB."""
    with open("/proc/self/statm") as f:
        return int(f.read().split()[1]) * os.sysconf("SC_PAGE_SIZE") / 2**20


def measure(n: int, dup_share: float, repeats: int) -> dict[str, Any]:
    """Build one group of ``n`` and curate it ``repeats`` times (run in a fresh process)."""
    rows, planted = build(n, dup_share)
    opts = CurateOptions(min_group_size=2, band=(0.0, 1.0), heldout_share=0.0)
    gc.collect()
    input_mb = _rss_mb()
    cpus, walls, dropped = [], [], 0
    for _ in range(repeats):
        gc.collect()
        c0, w0 = time.process_time(), time.perf_counter()
        res = curate(rows, opts)
        cpus.append(time.process_time() - c0)
        walls.append(time.perf_counter() - w0)
        dropped = res.dropped_rollouts["near_duplicate"]
        del res
    peak_mb = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    return {
        "n": n,
        "planted": planted,
        "dropped": dropped,
        "cpu": statistics.median(cpus),
        "cpu_all": cpus,
        "wall": statistics.median(walls),
        "input_mb": input_mb,
        "peak_mb": peak_mb,
    }


def _in_child(n: int, args: argparse.Namespace) -> dict[str, Any]:
    """One size in a fresh interpreter, so its peak RSS is its own."""
    cmd = [sys.executable, __file__, "--one", str(n), "--dups", str(args.dups)]
    cmd += ["--repeats", str(args.repeats)]
    env = {**os.environ, "OMP_NUM_THREADS": "1", "OPENBLAS_NUM_THREADS": "1"}
    out = subprocess.run(cmd, check=True, capture_output=True, text=True, env=env).stdout
    result: dict[str, Any] = json.loads(out.strip().splitlines()[-1])
    return result


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--n", type=int, default=50_000)
    ap.add_argument("--sizes", default="", help="comma-separated sizes (default n/4, n/2, n)")
    ap.add_argument("--dups", type=float, default=0.1, help="share of planted near duplicates")
    ap.add_argument("--repeats", type=int, default=3, help="curate runs per size (median)")
    ap.add_argument("--one", type=int, default=0, help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.one:
        print(json.dumps(measure(args.one, args.dups, args.repeats)))
        return
    sizes = [int(s) for s in args.sizes.split(",") if s] or [args.n // 4, args.n // 2, args.n]
    print(
        f"{'rollouts':>9s} {'planted':>8s} {'dropped':>8s} {'cpu s':>7s} {'wall s':>7s} "
        f"{'input MB':>9s} {'peak MB':>8s}  cpu s of each run"
    )
    results = [_in_child(n, args) for n in sizes]
    for r in results:
        runs = ", ".join(f"{c:.2f}" for c in r["cpu_all"])
        print(
            f"{r['n']:9,d} {r['planted']:8,d} {r['dropped']:8,d} {r['cpu']:7.2f} {r['wall']:7.2f} "
            f"{r['input_mb']:9.0f} {r['peak_mb']:8.0f}  {runs}"
        )
    times = [r["cpu"] for r in results]
    extra = [r["peak_mb"] - r["input_mb"] for r in results]
    ratios = [b / a for a, b in itertools.pairwise(times) if a > 0]
    last = results[-1]
    print(
        f"curate one group of {last['n']:,} rollouts: {last['cpu']:.2f} CPU s, "
        f"{last['dropped']:,} near duplicates dropped of {last['planted']:,} planted (median "
        f"over {args.repeats} runs); peak RSS {last['peak_mb']:.0f} MB ({extra[-1]:.0f} MB "
        "above the input); "
        "time ratio per doubling " + ", ".join(f"{r:.2f}" for r in ratios)
    )


if __name__ == "__main__":
    main()
