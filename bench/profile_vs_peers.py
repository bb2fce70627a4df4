"""Profile throughput: rlstream ``profile_rows`` vs whileai ``group_signal`` + ``hack_scan``.

Both sides profile the same graded rollouts (seeded transcripts of three domains, graded by
rlstream's rewards before the clock starts, 8 rollouts per task):

* **rlstream** ``profile_rows`` over ``RolloutRow``s, timed twice: on ready rows, and
  including ``RolloutRow.from_scored`` (surface features + fingerprint from each transcript),
  which is the like-for-like number: whileai derives its features from the rows inside
  ``hack_scan``.
* **whileai** ``group_signal`` (groups, mixed rate, pass@k) + ``hack_scan`` (within-group
  correlation against a 100-shuffle floor), its defaults, on whileai row-v1 dicts of the
  same conversations and the same pass verdicts.

Then a synthetic 1M-rollout profile (rows built directly, 8 per task) is timed once.

    python bench/profile_vs_peers.py --size 6000 --million 1000000
"""

from __future__ import annotations

import argparse
import random
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from _common import header, measure, print_table
from _peers import whileai_available, whileai_profile, whileai_row
from _sample import keyed, sample
from rlstream.grading import RewardSpec, grade_many
from rlstream.metrics import Profile, RolloutRow, profile_rows
from rlstream.rollout import ScoredRollout

TARGET_RATIO = 10.0
TARGET_MILLION_S = 30.0


def scored_rollouts(size: int, seed: int) -> list[ScoredRollout]:
    """Grade seeded conversations with rlstream's own rewards (untimed set-up): support
    conversations by customer_support + tool_calling, maths by gsm8k, task keys resolved
    from the logged task id as ingest does."""
    out: list[ScoredRollout] = []
    per = max(8, size // 2)
    for domain, names in (
        ("customer_support", ["customer_support", "tool_calling"]),
        ("gsm8k", ["gsm8k"]),
    ):
        s = sample(domain, seed=seed, n=per)
        spec = RewardSpec.from_names(names)
        out.extend(
            r for r in grade_many(keyed(s.transcripts), spec) if isinstance(r, ScoredRollout)
        )
    return out


def profile(rows: list[RolloutRow]) -> Profile:
    return profile_rows(rows)


def million_rows(n: int, seed: int) -> list[RolloutRow]:
    """n synthetic rows, 8 per task, task pass rates spread over [0, 1]."""
    rng = random.Random(seed)
    rows = []
    tools = ("tool:lookup_order", "tool:refund_payment", "tool:cancel_order")
    p = 0.0
    for i in range(n):
        if i % 8 == 0:
            p = rng.choice((0.0, 0.1, 0.3, 0.5, 0.7, 0.9, 1.0))
        ok = rng.random() < p
        length = rng.randint(80, 1200)
        rows.append(
            RolloutRow(
                rollout_id=f"r{i}",
                task_key=f"t{i // 8}",
                score=1.0 if ok else rng.random() * 0.5,
                passed=ok,
                features={
                    "reply_length": float(length),
                    "tool_calls": float(rng.randint(0, 3)),
                    "assistant_turns": float(rng.randint(1, 4)),
                    "repetition": rng.random() * 0.2,
                    "numbers": float(rng.randint(0, 6)),
                    "truncated": 0.0,
                    rng.choice(tools): 1.0,
                },
                digest=rng.getrandbits(63),
            )
        )
    return rows


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument(
        "--size", type=int, default=6000, help="graded rollouts compared with whileai"
    )
    parser.add_argument(
        "--million", type=int, default=1_000_000, help="rows in the large profile (0 skips it)"
    )
    parser.add_argument("--seed", type=int, default=7)
    parser.add_argument("--repeats", type=int, default=3)
    args = parser.parse_args()
    header("profile throughput per core: rlstream profile_rows vs whileai group_signal + hack_scan")

    scored = scored_rollouts(args.size, args.seed)
    n = len(scored)
    rows = [RolloutRow.from_scored(s) for s in scored]
    rl_ready = measure(lambda: profile(rows), repeats=args.repeats)
    rl_full = measure(
        lambda: profile([RolloutRow.from_scored(s) for s in scored]), repeats=args.repeats
    )
    table: list[list[object]] = [
        ["rlstream profile_rows (ready rows)", n, rl_ready.cpu_s, rl_ready.rate(n)],
        ["rlstream from_scored + profile_rows", n, rl_full.cpu_s, rl_full.rate(n)],
    ]
    ratio = ratio_ready = ratio_hand = None
    if whileai_available():
        wrows = [whileai_row(s.transcript, s.task_key, s.passed) for s in scored]
        wa = measure(lambda: whileai_profile(wrows), repeats=1)
        wa_hand = measure(lambda: whileai_profile(wrows, auto=False), repeats=1)
        wa_gs = measure(lambda: whileai_profile(wrows, hack=False), repeats=args.repeats)
        table += [
            ["whileai group_signal + hack_scan", n, wa.cpu_s, wa.rate(n)],
            ["whileai ... hack_scan(auto=False)", n, wa_hand.cpu_s, wa_hand.rate(n)],
            ["whileai group_signal only", n, wa_gs.cpu_s, wa_gs.rate(n)],
        ]
        ratio = rl_full.rate(n) / wa.rate(n)
        ratio_ready = rl_ready.rate(n) / wa.rate(n)
        ratio_hand = rl_full.rate(n) / wa_hand.rate(n)
        gs = wa_gs.result["group_signal"]
        print(
            f"# whileai: {gs['n_groups']} groups, mixed_rate {gs['mixed_rate']:.3f}, "
            f"pass@1 {gs['pass_at_1']:.3f}, capacity {wa.result['hack_scan']['support']['capacity']:.3f}"
        )
    print(f"# rlstream: {_summary(rl_ready.result)}")
    print_table(["tool", "rollouts", "cpu s", "rollouts/s"], table)
    print()
    if args.million:
        big = million_rows(args.million, args.seed)
        one = measure(lambda: profile(big), repeats=1)
        verdict = "meets" if one.wall_s < TARGET_MILLION_S else "misses"
        print(
            f"large profile: {args.million:,} rollouts in {one.wall_s:.2f} s wall / "
            f"{one.cpu_s:.2f} s cpu ({verdict} target < {TARGET_MILLION_S:.0f} s for 1M); "
            f"{_summary(one.result)}"
        )
        del big
    if ratio is None:
        print("ratio rlstream/whileai: whileai not installed (pip install -e '.[bench]')")
        return
    verdict = "meets" if ratio >= TARGET_RATIO else "below"
    print(
        f"ratio rlstream/whileai (rollouts/s per core, features included): {ratio:.2f}x "
        f"(ready rows: {ratio_ready:.2f}x; vs whileai hand-tier scan: {ratio_hand:.2f}x) "
        f"({verdict} target >= {TARGET_RATIO:.0f}x)"
    )


def _summary(p: Profile) -> str:
    scan = p.hack_scan
    scanned = (
        f", hack scan over {scan.scanned_groups} groups (sampled={scan.sampled})" if scan else ""
    )
    return (
        f"{p.groups} groups, mixed {p.mixed_groups}, gradient support {_f(p.gradient_support)}, "
        f"pass@1 {_f(p.pass_at_1)}{scanned}"
    )


def _f(x: float | None) -> str:
    return "n/a" if x is None else f"{x:.4f}"


if __name__ == "__main__":
    main()
