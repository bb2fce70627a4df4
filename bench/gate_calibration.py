"""The promotion gate's error rates, measured: false promotions and power by held-out size.

    .venv/bin/python bench/gate_calibration.py [--repeats 300] [--sizes 5,10,30,150]
                                               [--gains 0.05,0.10,0.20] [--workers 2]

Synthetic paired outcomes run through the gate's own decision (``gain_test`` +
``gain_decision``, default ``GateConfig``: 95%, min_effect 0, min_prompts 30). Prompts
differ in difficulty: each prompt's baseline pass rate is drawn from Beta(1.2, 1.8) (mean
0.4, many prompts near 0 or 1); the candidate's is ``p + g (1 - p) / 0.6``, so the expected
gain is exactly ``g``. Outcomes are correlated within a pair: each sample of the candidate
reuses the baseline's uniform draw with probability 0.5 (the same prompt is easy or hard for
both). Two settings: ``binary`` (one greedy sample per prompt: pass@1 in {0, 1}, the exact
McNemar test) and ``k=4`` (pass@1 as a fraction of 4 samples: the sign-flip permutation
test). With g = 0 the candidate equals the baseline: the promote rate is the false-promotion
rate, to be at most alpha = 0.05. ``test`` is the test alone, without the min_prompts floor
(which makes the gate's own rate 0 below 30 prompts). Monte Carlo standard error of a rate
r over R repeats: sqrt(r (1 - r) / R) (0.013 at r = 0.05, R = 300).
"""

from __future__ import annotations

import argparse
import time
from concurrent.futures import ProcessPoolExecutor

import numpy as np

from _common import header, print_table
from rlstream.evaluation import GateConfig
from rlstream.evaluation.gate import gain_decision
from rlstream.evaluation.stats import gain_test

GATE = GateConfig()
MEAN_BASE = 1.2 / (1.2 + 1.8)
COUPLING = 0.5


def simulate(n: int, k: int, gain: float, rng: np.random.Generator) -> tuple[np.ndarray, ...]:
    """Per-prompt pass@1 (fraction of k samples) of the baseline and the candidate."""
    p = rng.beta(1.2, 1.8, n)
    q = p + gain * (1.0 - p) / (1.0 - MEAN_BASE)
    u = rng.random((n, k))
    shared = rng.random((n, k)) < COUPLING
    v = np.where(shared, u, rng.random((n, k)))
    base = (u < p[:, None]).mean(axis=1)
    cand = (v < q[:, None]).mean(axis=1)
    return cand, base


def cell(args: tuple[int, int, float, int, int]) -> tuple[int, int, float, float]:
    """(k, n, gain) over ``repeats`` seeded trials: (gate promote rate, test reject rate)."""
    k, n, gain, repeats, seed = args
    rng = np.random.default_rng([seed, k, n, round(gain * 1000)])
    promoted = rejected_h0 = 0
    alpha = 1.0 - GATE.confidence
    for r in range(repeats):
        cand, base = simulate(n, k, gain, rng)
        p, _ = gain_test(cand, base, GATE.min_effect, seed=r)
        promoted += gain_decision(n, p, GATE) == "promote"
        rejected_h0 += p < alpha
    return k, n, promoted / repeats, rejected_h0 / repeats


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--repeats", type=int, default=300)
    ap.add_argument("--sizes", default="5,10,30,150")
    ap.add_argument("--gains", default="0.05,0.10,0.20")
    ap.add_argument("--workers", type=int, default=2)
    ap.add_argument("--seed", type=int, default=0)
    a = ap.parse_args()
    sizes = [int(x) for x in a.sizes.split(",")]
    gains = [0.0, *(float(x) for x in a.gains.split(","))]
    header(
        f"gate calibration: {a.repeats} repeats per cell, confidence {GATE.confidence}, "
        f"min_effect {GATE.min_effect}, min_prompts {GATE.min_prompts}"
    )
    t0 = time.perf_counter()
    jobs = [(k, n, g, a.repeats, a.seed) for k in (1, 4) for n in sizes for g in gains]
    with ProcessPoolExecutor(max_workers=max(1, a.workers)) as pool:
        results = dict(zip(jobs, pool.map(cell, jobs), strict=True))
    rows = []
    worst = 0.0
    for k in (1, 4):
        for n in sizes:
            null = results[(k, n, 0.0, a.repeats, a.seed)]
            worst = max(worst, null[2], null[3])
            row: list[object] = ["binary" if k == 1 else f"k={k}", n, null[2], null[3]]
            for g in gains[1:]:
                _, _, gate_rate, test_rate = results[(k, n, g, a.repeats, a.seed)]
                row.append(f"{gate_rate:.3f} ({test_rate:.3f})")
            rows.append(row)
    heads = [
        "setting",
        "n",
        "false promote",
        "test",
        *(f"power +{g:.2f} (test)" for g in gains[1:]),
    ]
    print_table(heads, rows)
    alpha = 1.0 - GATE.confidence
    top = {k: results.get((k, max(sizes), max(gains), a.repeats, a.seed)) for k in (1, 4)}
    power = ", ".join(f"{'binary' if k == 1 else 'k=4'} {v[2]:.3f}" for k, v in top.items() if v)
    verdict = "met" if worst <= alpha else "MISSED"
    print(
        f"false promotion <= alpha {alpha:.2f} at every n (gate and test alone): {verdict} "
        f"(max {worst:.3f}); power at n={max(sizes)}, +{max(gains):.2f}: {power}; "
        f"{time.perf_counter() - t0:.1f} s"
    )


if __name__ == "__main__":
    main()
