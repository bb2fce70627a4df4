"""Cross-check against whileai 0.131's offline scorers (Apache-2.0), when installed.

Same rows, same numbers: pass@1, pass@k, pass^k, headroom, mixed/unanimous counts. The
known, intended difference is support: whileai's capacity divides by all groups.
"""

from __future__ import annotations

import random

import pytest

from rlstream.metrics import RolloutRow, profile_rows

pytestmark = pytest.mark.unit

wai = pytest.importorskip("whileai.simulations")
optimize = pytest.importorskip("whileai.simulations.score.optimize")


@pytest.mark.parametrize(("n", "seed"), [(4, 0), (8, 1), (16, 2)])
def test_pass_numbers_match_whileai(n: int, seed: int) -> None:
    rng = random.Random(seed)
    rates = [rng.random() for _ in range(40)]
    labels = [(f"t{g}", int(rng.random() < p)) for g, p in enumerate(rates) for _ in range(n)]
    theirs = optimize.group_signal([{"task_id": t, "reward": r} for t, r in labels])
    rows = [RolloutRow(f"{t}-{i}", t, float(r), bool(r), {}) for i, (t, r) in enumerate(labels)]
    ours = profile_rows(rows, hack_scan=False, resamples=0)
    assert ours.pass_at_1 == pytest.approx(theirs["pass_at_1"])
    assert ours.pass_at_k[str(n)] == pytest.approx(theirs["pass_at_k"])
    assert ours.pass_hat_k[str(n)] == pytest.approx(theirs["pass_pow_k"])
    assert ours.headroom == pytest.approx(theirs["headroom"])
    assert ours.mixed_groups == theirs["n_mixed"]
    assert (ours.all_pass_groups, ours.all_fail_groups) == (
        theirs["n_all_one"],
        theirs["n_all_zero"],
    )


def test_within_and_pooled_rho_match_whileai_hack_scan() -> None:
    scan_mod = pytest.importorskip("whileai.simulations.score.hack_scan")
    rng = random.Random(3)
    theirs_rows, ours_rows = [], []
    for g in range(40):
        difficulty = rng.random()
        for i in range(8):
            length = rng.randint(20, 400)
            r = int(difficulty + 0.002 * length + rng.gauss(0, 0.3) > 1.0)
            theirs_rows.append({"prompt": f"p{g}", "reward": r, "final_text": "a" * length})
            ours_rows.append(
                RolloutRow(
                    f"{g}-{i}",
                    f"p{g}",
                    float(r),
                    bool(r),
                    {"reply_length": float(length)},
                    g * 100 + i,
                )
            )
    theirs = scan_mod.hack_scan(theirs_rows, auto=False)
    theirs_len = next(f for f in theirs["features"] if f["name"] == "reply_length")
    ours = profile_rows(ours_rows).hack_scan
    assert ours is not None
    ours_len = next(f for f in ours.features if f.name == "reply_length")
    assert ours_len.within_rho == pytest.approx(theirs_len["rho"], abs=1e-3)
    assert ours_len.pooled_rho == pytest.approx(theirs_len["pooled"], abs=1e-3)
    assert ours_len.above_floor == theirs_len["above_floor"]
