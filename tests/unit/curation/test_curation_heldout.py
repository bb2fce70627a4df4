"""The held-out split: deterministic, monotone in the share, and never in a training file."""

from __future__ import annotations

from pathlib import Path

import orjson
from rollout_builders import group

from rlstream.curation import CurateOptions, curate, write_dataset
from rlstream.curation.heldout import heldout_point, is_heldout, keys_rule


def _pool(n_tasks: int = 60) -> list:
    rows = []
    for t in range(n_tasks):
        rows += group(f"task-{t:03d}", 4, 1 + t % 3, start=0)
    return rows


def test_hash_is_deterministic_and_monotone_in_the_share() -> None:
    keys = [f"k{i}" for i in range(2000)]
    at10 = {k for k in keys if is_heldout("bot", k, 0.1)}
    at20 = {k for k in keys if is_heldout("bot", k, 0.2)}
    assert at10 < at20  # raising the share only adds keys
    assert 150 < len(at10) < 250 and 330 < len(at20) < 470
    assert not any(is_heldout("bot", k, 0.0) for k in keys)
    # the agent is part of the hash: another agent holds out other keys
    other = {k for k in keys if is_heldout("other-bot", k, 0.1)}
    assert other != at10
    assert heldout_point("bot", "k1") == heldout_point("bot", "k1")


def test_a_reward_version_bump_keeps_the_split() -> None:
    """Per agent, whatever the reward spec: a key trained under v1 is never held out under
    v2 (about a tenth of recurring keys were, when the spec was in the hash)."""
    from rollout_builders import group as grp

    keys = [f"t{i}" for i in range(500)]
    v1 = [r for k in keys for r in grp(k, 2, 1, start=0)]
    v2 = [r.model_copy(update={"reward_spec": "tool_calling@2"}) for r in v1]
    held1 = {g.task_key for g in curate(v1, CurateOptions(heldout_share=0.1)).heldout}
    held2 = {g.task_key for g in curate(v2, CurateOptions(heldout_share=0.1)).heldout}
    assert held1 and held1 == held2


def test_heldout_keys_never_reach_a_training_file(tmp_path: Path) -> None:
    rows = _pool()
    opts = CurateOptions(heldout_share=0.25, near_dup_threshold=None)
    result = curate(rows, opts)
    expected = {r.task_key for r in rows if is_heldout(None, r.task_key, 0.25)}
    assert expected and {g.task_key for g in result.heldout} == expected
    manifest = write_dataset(result, tmp_path)
    trained: set[str] = set()
    for name in ("grpo.jsonl", "dpo.jsonl", "sft.jsonl"):
        for line in (tmp_path / name).read_bytes().splitlines():
            trained.add(orjson.loads(line)["task_key"])
    assert trained and not (trained & expected)
    assert not {e.task_key for e in manifest.lineage} & expected
    held_rows = [orjson.loads(x) for x in (tmp_path / "heldout.jsonl").read_bytes().splitlines()]
    assert [r["task_key"] for r in held_rows] == sorted(expected)
    assert manifest.heldout_task_keys == tuple(sorted(expected))
    assert manifest.counts["heldout_task_keys"] == len(expected)
    first = held_rows[0]
    assert [m["role"] for m in first["prompt"]] == ["system", "user"]  # no answer leaks
    label = orjson.loads(first["label"])
    assert label["task_key"] == first["task_key"] and "expected_tool_calls" in label
    assert manifest.files["heldout.jsonl"].rows == len(expected)


def test_an_explicit_key_set_overrides_the_hash() -> None:
    rows = _pool(10)
    result = curate(rows, CurateOptions(heldout_share=0.5), heldout=keys_rule({"task-003"}))
    assert [g.task_key for g in result.heldout] == ["task-003"]
    assert "task-003" not in {g.task_key for g in result.kept}
    assert "task-003" not in {r.task_key for r in result.sft_pool}


def test_share_zero_holds_out_nothing() -> None:
    result = curate(_pool(20), CurateOptions(heldout_share=0.0))
    assert result.heldout == ()
