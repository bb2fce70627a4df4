"""curate(): band, dead, singleton, duplicate, conflict, truncation and hack-scan handling."""

from __future__ import annotations

from pathlib import Path

import pytest
from rollout_builders import group, rollout, text

from rlstream.curation import CurateOptions, curate
from rlstream.rollout import ScoredRollout

pytestmark = pytest.mark.unit


def test_band_dead_and_singletons(mixed_set: list[ScoredRollout]) -> None:
    res = curate(mixed_set)
    assert [g.task_key for g in res.kept] == ["alpha", "beta", "gamma"]
    assert [(g.n, g.passes) for g in res.kept] == [(4, 2), (4, 1), (5, 3)]
    assert res.dropped_groups == {
        "too_small": 1,
        "dead_all_pass": 1,
        "dead_all_fail": 1,
        "out_of_band": 1,
    }
    assert res.dropped_rollouts["dead_all_pass"] == 4
    assert res.dropped_rollouts["out_of_band"] == 10
    assert res.dropped_rollouts["too_small"] == 1
    assert res.input_rollouts == len(mixed_set) and res.kept_rollouts == 13
    # before: everything clean; after: only kept groups, all mixed
    assert res.profile_before.groups == 7 and res.profile_before.singletons == 1
    assert res.profile_after.groups == 3 and res.profile_after.mixed_groups == 3
    assert res.profile_after.gradient_support is not None
    assert res.profile_before.gradient_support is not None
    assert res.profile_after.gradient_support > res.profile_before.gradient_support
    # SFT draws on every clean pass, dead all-pass groups included
    assert len(res.sft_pool) == 2 + 1 + 3 + 4 + 1 + 1
    assert res.method == res.profile_before.method


def test_band_edges_are_inclusive_and_configurable() -> None:
    rows = group("a", 5, 1) + group("b", 5, 4)  # 0.2 and 0.8
    assert len(curate(rows).kept) == 2
    assert [g.task_key for g in curate(rows, CurateOptions(band=(0.3, 0.9))).kept] == ["b"]
    with pytest.raises(ValueError):
        CurateOptions(band=(0.8, 0.2))


def test_exact_duplicates_are_dropped_after_masking() -> None:
    rows = group("a", 4, 2)
    # the same reply twice, with other numbers, case and spacing
    rows.append(rollout("a", 8, True, reply="Your refund of 42 dollars is ON its way"))
    rows.append(rollout("a", 9, True, reply="your refund of 17 dollars  is on its way"))
    res = curate(rows)
    assert res.dropped_rollouts["exact_duplicate"] == 1
    assert res.kept[0].n == 5
    assert not res.conflicting_rewards


def test_conflicting_rewards_reported_and_dropped() -> None:
    rows = group("a", 4, 2)
    rows.append(rollout("a", 10, True, reply="I have issued the refund."))
    rows.append(rollout("a", 11, False, reply="I have issued the refund."))
    res = curate(rows)
    assert len(res.conflicting_rewards) == 1
    conflict = res.conflicting_rewards[0]
    assert conflict.task_key == "a" and sorted(conflict.passed) == [False, True]
    assert res.dropped_rollouts["conflicting_rewards"] == 2
    assert res.kept[0].n == 4
    kept = curate(rows, CurateOptions(drop_conflicting=False))
    assert len(kept.conflicting_rewards) == 1
    assert kept.dropped_rollouts["conflicting_rewards"] == 0 and kept.kept[0].n == 5
    assert kept.dropped_rollouts["exact_duplicate"] == 1


def test_masked_equal_but_different_answers_are_not_conflicts() -> None:
    # gsm8k-like: the replies differ only in the number the reward checks
    rows = group("a", 4, 2)
    rows.append(rollout("a", 10, True, reply="The answer is 42."))
    rows.append(rollout("a", 11, False, reply="The answer is 17."))
    rows.append(rollout("a", 12, False, reply="The answer is 19."))  # same as 11 once masked
    res = curate(rows)
    assert not res.conflicting_rewards
    assert res.dropped_rollouts["exact_duplicate"] == 1
    ids = {r.transcript.conversation_id for r in res.kept[0].rollouts}
    assert "a-c10" in ids and len(ids & {"a-c11", "a-c12"}) == 1


def test_near_duplicates_same_outcome_only() -> None:
    base = text(7, words=60)
    tweak = base.rsplit(" ", 1)[0] + " finally"
    rows = group("a", 4, 2)
    rows.append(rollout("a", 20, True, reply=base))
    rows.append(rollout("a", 21, True, reply=tweak))  # near dup of 20, same outcome
    rows.append(rollout("a", 22, False, reply=tweak + " extra"))  # near dup, other outcome
    res = curate(rows)
    assert res.dropped_rollouts["near_duplicate"] == 1
    ids = {r.transcript.conversation_id for r in res.kept[0].rollouts}
    assert "a-c20" in ids and "a-c21" not in ids and "a-c22" in ids
    off = curate(rows, CurateOptions(near_dup_threshold=None))
    assert off.dropped_rollouts["near_duplicate"] == 0


def test_truncated_rollouts_are_dropped() -> None:
    rows = group("a", 4, 2)
    rows.append(rollout("a", 30, True, metadata={"finish_reason": "length"}))
    rows.append(rollout("a", 31, False, final=False, tool=None))  # no assistant turn at all
    rows.append(rollout("a", 32, False, metadata={"error": "tool timeout"}))
    rows.append(rollout("a", 33, False, final=False))  # ends on a tool result: kept
    res = curate(rows)
    d = res.dropped_rollouts
    assert (d["truncated_length"], d["no_assistant_turn"], d["truncated_errored"]) == (1, 1, 1)
    assert res.kept[0].n == 5


def test_redelivered_copies_count_once() -> None:
    rows = group("a", 4, 2)
    res = curate(rows + rows[:2])
    assert res.dropped_rollouts["redelivered"] == 2 and res.kept[0].n == 4


def _length_hack() -> list[ScoredRollout]:
    rows = []
    for g in range(30):
        for i in range(6):
            passed = i % 2 == 0
            words = 80 if passed else 10
            rows.append(rollout(f"t{g:02d}", i, passed, reply=text(g * 100 + i, words=words)))
    return rows


def test_hack_scan_report_vs_reject() -> None:
    from rlstream.curation import DatasetRejectedError, write_dataset

    reported = curate(_length_hack())
    scan = reported.profile_before.hack_scan
    assert scan is not None and scan.alarm and scan.top_feature == "reply_length"
    assert not reported.rejected
    rejected = curate(_length_hack(), CurateOptions(hack_scan="reject"))
    assert rejected.rejected and "reply_length" in (rejected.rejection_reason or "")
    with pytest.raises(DatasetRejectedError):
        write_dataset(rejected, __import__("pathlib").Path("/nonexistent/never-written"))
    endorsed = curate(_length_hack(), CurateOptions(hack_scan="reject", endorsed=("reply_length",)))
    assert not endorsed.rejected
    off = curate(_length_hack(), CurateOptions(hack_scan="off"))
    assert off.profile_before.hack_scan is None


def test_rewards_declared_endorsements_are_used() -> None:
    from typing import ClassVar

    from rlstream.rewards.registry import register, unregister

    class LengthyReward:  # a reward that *means* to pay for long replies
        name: ClassVar[str] = "outcome_lengthy"
        version: ClassVar[str] = "1"
        endorsed_features: ClassVar[tuple[str, ...]] = ("reply_*",)

    rows = [
        r.model_copy(
            update={
                "results": tuple(
                    x.model_copy(update={"reward": "outcome_lengthy"}) for x in r.results
                )
            }
        )
        for r in _length_hack()
    ]
    register("outcome_lengthy", LengthyReward)
    try:
        res = curate(rows, CurateOptions(hack_scan="reject"))
        assert res.endorsed == ("reply_*",) and not res.rejected
        ignored = curate(rows, CurateOptions(hack_scan="reject", endorse_from_rewards=False))
        assert ignored.rejected and ignored.endorsed == ()
    finally:
        unregister("outcome_lengthy")
    assert curate(
        rows, CurateOptions(hack_scan="reject")
    ).rejected  # unknown reward: no endorsement


def test_groups_pooling_several_policies_are_counted() -> None:
    """Curation pools a task's rollouts across policies; the result (and so the manifest
    and the CLI) says how many kept groups mix policies instead of pooling silently."""
    one = group("a", 4, 2)
    mixed = [rollout("b", i, i < 2, policy="pv1" if i % 2 else "pv2") for i in range(4)]
    res = curate(one + mixed)
    assert [g.task_key for g in res.kept] == ["a", "b"]
    assert res.mixed_policy_groups == 1
    assert curate(one).mixed_policy_groups == 0


def test_mixed_policy_groups_reach_the_manifest_and_the_cli(tmp_path: Path) -> None:
    from rlstream.curation import write_dataset
    from rlstream.services.cli import report

    mixed = [rollout("b", i, i < 2, policy="pv1" if i % 2 else "pv2") for i in range(4)]
    res = curate(group("a", 4, 2) + mixed)
    manifest = write_dataset(res, tmp_path / "ds")
    assert manifest.counts["mixed_policy_groups"] == 1
    with report.console.capture() as cap:
        report.print_curation(res, manifest, tmp_path / "ds")
    assert "1 kept group(s) pool rollouts of several policies" in cap.get()
