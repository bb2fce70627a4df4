"""Curation of one very large group: near-duplicate removal must stay linear.

    .venv/bin/python bench/curate_group.py [--n 50000] [--sizes 12500,25000,50000] [--dups 0.1]

One task with ``n`` graded rollouts (half pass), each a random 40-word reply from a
300-word vocabulary, with a share ``--dups`` of them a one-word edit of an earlier reply
(same outcome): those, and only those, must be dropped as near duplicates. Each size is
timed (CPU and wall seconds of ``curate``); the last line gives the largest size's time,
the dropped count against the planted count, and the time ratio per doubling (linear ~2).
"""

from __future__ import annotations

import argparse
import itertools
import random
import time

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


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--n", type=int, default=50_000)
    ap.add_argument("--sizes", default="", help="comma-separated sizes (default n/4, n/2, n)")
    ap.add_argument("--dups", type=float, default=0.1, help="share of planted near duplicates")
    args = ap.parse_args()
    sizes = [int(s) for s in args.sizes.split(",") if s] or [args.n // 4, args.n // 2, args.n]
    opts = CurateOptions(min_group_size=2, band=(0.0, 1.0), heldout_share=0.0)
    print(f"{'rollouts':>9s} {'planted':>8s} {'dropped':>8s} {'cpu s':>7s} {'wall s':>7s}")
    times: list[float] = []
    last = (0, 0, 0, 0.0)
    for n in sizes:
        rows, planted = build(n, args.dups)
        c0, w0 = time.process_time(), time.perf_counter()
        res = curate(rows, opts)
        cpu, wall = time.process_time() - c0, time.perf_counter() - w0
        dropped = res.dropped_rollouts["near_duplicate"]
        times.append(cpu)
        last = (n, planted, dropped, cpu)
        print(f"{n:9,d} {planted:8,d} {dropped:8,d} {cpu:7.2f} {wall:7.2f}")
    ratios = [b / a for a, b in itertools.pairwise(times) if a > 0]
    n, planted, dropped, cpu = last
    print(
        f"curate one group of {n:,} rollouts: {cpu:.2f} CPU s, {dropped:,} near duplicates "
        f"dropped of {planted:,} planted; time ratio per doubling "
        + ", ".join(f"{r:.2f}" for r in ratios)
    )


if __name__ == "__main__":
    main()
