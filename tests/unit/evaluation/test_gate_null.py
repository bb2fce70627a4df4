"""Identical models never promote: the gate's false-promotion rate, simulated (fixed seed).

Baseline and candidate are the same model: per prompt one pass rate (prompts differ in
difficulty, Beta(1.2, 1.8)), and the two models' samples share their uniform draw half of
the time (correlated, exchangeable pairs). The old gate promoted one won prompt out of one.
"""

from __future__ import annotations

import numpy as np
from eval_helpers import report_from, sample

from rlstream.evaluation import decide

SIZES = (1, 2, 3, 5, 10, 29, 30, 40)
REPEATS = 240
ALPHA = 0.05


def _same_model(n: int, k: int, rng: np.random.Generator) -> tuple[list[list], list[list]]:
    p = rng.beta(1.2, 1.8, (n, 1))
    u = rng.random((n, k))
    v = np.where(rng.random((n, k)) < 0.5, u, rng.random((n, k)))
    base = [[sample(bool(x), attempted=False) for x in row] for row in u < p]
    cand = [[sample(bool(x), attempted=False) for x in row] for row in v < p]
    return base, cand


def test_identical_models_never_promote() -> None:
    rng = np.random.default_rng(17)
    promoted: list[int] = []
    for r in range(REPEATS):
        n = SIZES[r % len(SIZES)]
        k = 1 if r % 2 == 0 else 3  # exact McNemar, then the sign-flip permutation test
        base, cand = _same_model(n, k, rng)
        d = decide(report_from(base, cand, k=k))
        assert d.decision == "insufficient" or n >= 30, (n, d.reasons)
        if d.promote:
            promoted.append(n)
    rate = len(promoted) / REPEATS
    # a rate at alpha would show 12 +- 3 promotions here; the exact tests are conservative
    assert rate <= ALPHA and all(n >= 30 for n in promoted), promoted
    big = sum(1 for r in range(REPEATS) if SIZES[r % len(SIZES)] >= 30)
    assert len(promoted) / big <= ALPHA + 0.05  # the rate among decided runs, with MC slack
