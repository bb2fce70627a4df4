"""Hack scan: planted within-group hacks are named; difficulty confounds and noise are not."""

from __future__ import annotations

import random

import pytest

from rlstream.metrics import RolloutRow, profile_rows

pytestmark = pytest.mark.unit


def _rows(
    groups: int = 60, n: int = 8, *, seed: int = 0, length_drives: float = 0.0, dup: bool = False
) -> list[RolloutRow]:
    """Rows whose within-group reward follows reply_length by ``length_drives`` (0 = noise)."""
    rng = random.Random(seed)
    rows = []
    for g in range(groups):
        difficulty = rng.random()
        for i in range(n):
            length = rng.gauss(0, 1)
            noise = rng.gauss(0, 1)
            latent = difficulty + length_drives * length + (1 - length_drives) * noise * 0.5
            passed = latent > 0.5
            rows.append(
                RolloutRow(
                    rollout_id=f"g{g}-{i}",
                    task_key=f"g{g:03d}",
                    score=1.0 if passed else 0.0,
                    passed=passed,
                    features={
                        "reply_length": 200 + 50 * length,
                        "tool_calls": float(rng.randint(0, 4)),
                        "assistant_turns": float(rng.randint(1, 5)),
                    },
                    digest=(g * 10) if dup else (g * 100 + i),
                )
            )
    return rows


def test_planted_length_hack_is_named() -> None:
    scan = profile_rows(_rows(length_drives=0.8)).hack_scan
    assert scan is not None and not scan.refused
    assert scan.top_feature == "reply_length"
    assert "reply_length" in scan.above_floor
    assert scan.alarm and "non-endorsed feature reply_length ranks first" in scan.alarms[0]
    assert scan.floor is not None and 0 < scan.floor < scan.features[0].within_rho


def test_endorsed_feature_is_not_an_alarm_unless_negative() -> None:
    scan = profile_rows(_rows(length_drives=0.8), endorsed=("reply_length",)).hack_scan
    assert scan is not None and scan.top_feature == "reply_length" and not scan.alarm
    flipped = [
        RolloutRow(r.rollout_id, r.task_key, r.score, r.passed,
                   {**r.features, "reply_length": -r.features["reply_length"]}, r.digest)
        for r in _rows(length_drives=0.8)
    ]  # fmt: skip
    neg = profile_rows(flipped, endorsed=("reply_length",)).hack_scan
    assert neg is not None and neg.alarm
    assert any("endorsed feature reply_length correlates negatively" in a for a in neg.alarms)


def test_pure_noise_names_nothing() -> None:
    scan = profile_rows(_rows(length_drives=0.0, seed=3)).hack_scan
    assert scan is not None and not scan.refused
    assert not scan.alarm and scan.above_floor == ()


def test_difficulty_confound_is_pooled_only() -> None:
    # long replies on hard tasks, short on easy ones; inside a task, length is noise
    rng = random.Random(5)
    rows = []
    for g in range(80):
        p = g / 79
        for i in range(8):
            passed = rng.random() < p
            rows.append(
                RolloutRow(f"g{g}-{i}", f"g{g:03d}", float(passed), passed,
                           {"reply_length": 1000 * (1 - p) + rng.gauss(0, 5)}, g * 100 + i)
            )  # fmt: skip
    scan = profile_rows(rows).hack_scan
    assert scan is not None
    assert "reply_length" in scan.pooled_flags
    assert "reply_length" not in scan.above_floor and not scan.alarm
    assert scan.features[0].pooled_rho is not None and scan.features[0].pooled_rho < -0.3


def test_guard_refuses_with_few_distinct_rollouts() -> None:
    scan = profile_rows(_rows(length_drives=0.8, dup=True)).hack_scan
    assert scan is not None
    assert scan.refused and scan.median_distinct == 1.0 and not scan.alarm
    assert "too few to name a hack" in (scan.refused_reason or "")


def test_no_reward_variance_is_refused() -> None:
    rows = [
        RolloutRow(f"{g}-{i}", f"{g}", 1.0, True, {"reply_length": float(i)}, i)
        for g in range(5)
        for i in range(4)
    ]
    scan = profile_rows(rows).hack_scan
    assert scan is not None and scan.refused and scan.floor is None


def test_sampling_is_seeded_and_marked() -> None:
    from rlstream.metrics import ProfileAccumulator

    acc = ProfileAccumulator()
    acc.extend(_rows(groups=50, length_drives=0.8))
    a = acc.profile(scan_max_groups=20, seed=4).hack_scan
    b = acc.profile(scan_max_groups=20, seed=4).hack_scan
    assert a is not None and a == b and a.sampled and a.scanned_groups == 20
    assert a.top_feature == "reply_length"


def _tool_hack_rows() -> list[RolloutRow]:
    """Reward follows whether the refund tool was called; one rare tool on 5 rows."""
    rng = random.Random(11)
    rows = []
    for g in range(40):
        for i in range(6):
            refund = rng.random() < 0.5
            passed = refund if rng.random() < 0.9 else not refund
            feats = {"reply_length": 100 + rng.random() * 50}
            if refund:
                feats["tool:refund"] = 1.0
            if g * 6 + i < 5:
                feats["tool:rare"] = 1.0
            rows.append(
                RolloutRow(f"g{g}-{i}", f"g{g:03d}", float(passed), passed, feats, g * 100 + i)
            )
    return rows


def test_glob_endorsement_and_sparse_features() -> None:
    plain = profile_rows(_tool_hack_rows()).hack_scan
    assert plain is not None and plain.top_feature == "tool:refund" and plain.alarm
    assert "tool:rare" in plain.skipped_sparse
    assert all(f.name != "tool:rare" for f in plain.features)
    globbed = profile_rows(_tool_hack_rows(), endorsed=("tool:*",)).hack_scan
    assert globbed is not None and not globbed.alarm
    assert globbed.features[0].endorsed
