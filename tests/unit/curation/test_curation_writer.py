"""write_dataset(): byte-identical output, manifest hashes, GRPO/DPO/SFT row shapes, lineage."""

from __future__ import annotations

import hashlib
import random
from pathlib import Path

import orjson
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from rollout_builders import group, rollout, text

from rlstream.curation import (
    CurateOptions,
    DatasetIntegrityError,
    curate,
    verify_dataset,
    write_dataset,
)
from rlstream.curation.records import completion_length, dpo_pairs, split_prompt
from rlstream.rollout import ScoredRollout

pytestmark = pytest.mark.unit

FILES = ("grpo.jsonl", "dpo.jsonl", "sft.jsonl", "next_steps.md", "manifest.json")


def _read(d: Path, name: str) -> list[dict]:  # type: ignore[type-arg]
    return [orjson.loads(line) for line in (d / name).read_bytes().splitlines()]


def test_same_input_any_order_gives_identical_bytes(
    mixed_set: list[ScoredRollout], tmp_path: Path
) -> None:
    outputs = []
    for seed in range(4):
        rows = mixed_set[:]
        random.Random(seed).shuffle(rows)
        out = tmp_path / f"run{seed}"
        manifest = write_dataset(curate(rows), out)
        outputs.append((manifest.dataset_id, {f: (out / f).read_bytes() for f in FILES}))
    assert all(o == outputs[0] for o in outputs[1:])
    # rewriting into the same directory is also a no-op byte-wise
    write_dataset(curate(mixed_set), tmp_path / "run0")
    assert {f: (tmp_path / "run0" / f).read_bytes() for f in FILES} == outputs[0][1]
    assert not list((tmp_path / "run0").glob(".*.tmp"))


def test_manifest_hashes_match_files(mixed_set: list[ScoredRollout], tmp_path: Path) -> None:
    m = write_dataset(curate(mixed_set), tmp_path)
    assert set(m.files) == {
        "grpo.jsonl",
        "dpo.jsonl",
        "sft.jsonl",
        "heldout.jsonl",
        "next_steps.md",
    }
    for name, entry in m.files.items():
        data = (tmp_path / name).read_bytes()
        assert entry.sha256 == hashlib.sha256(data).hexdigest() and entry.bytes == len(data)
    expected_id = hashlib.sha256("\n".join(sorted(e.sha256 for e in m.files.values())).encode())
    assert m.dataset_id == expected_id.hexdigest()
    on_disk = orjson.loads((tmp_path / "manifest.json").read_bytes())
    assert on_disk["dataset_id"] == m.dataset_id
    assert on_disk["reward_versions"] == {"outcome": ["1.2"]}
    assert on_disk["thresholds"]["band"] == [0.2, 0.8]
    assert on_disk["profiles"]["before"]["groups"] == 7
    assert on_disk["dropped_groups"]["dead_all_fail"] == 1
    assert verify_dataset(tmp_path) == m
    (tmp_path / "sft.jsonl").write_bytes(b"tampered\n")
    with pytest.raises(DatasetIntegrityError):
        verify_dataset(tmp_path)


def test_grpo_rows_are_prompts_plus_verifier_labels(
    mixed_set: list[ScoredRollout], tmp_path: Path
) -> None:
    write_dataset(curate(mixed_set), tmp_path)
    rows = _read(tmp_path, "grpo.jsonl")
    assert [r["task_key"] for r in rows] == ["alpha", "beta", "gamma"]
    first = rows[0]
    assert [m["role"] for m in first["prompt"]] == ["system", "user"]  # up to first assistant turn
    assert first["policy_version"] == "pv1"
    label = orjson.loads(first["label"])
    assert label["task_key"] == "alpha" and label["policy_version"] == "pv1"
    assert label["expected_tool_calls"] == [{"name": "lookup", "arguments": {"q": "alpha"}}]
    assert label["group"] == {"n": 4, "passes": 2, "pass_rate": 0.5}
    assert label["reward_versions"] == {"outcome": "1.2"}
    passing_ids = {r.rollout_id for r in mixed_set if r.passed and r.task_key == "alpha"}
    assert label["reference_rollout_id"] in passing_ids


def test_gold_label_travels_in_the_verifier_label(tmp_path: Path) -> None:
    rows = [rollout("q", i, i < 2, label={"answer": "42"}) for i in range(4)]
    write_dataset(curate(rows), tmp_path)
    assert orjson.loads(_read(tmp_path, "grpo.jsonl")[0]["label"])["label"] == {"answer": "42"}


def test_dpo_pairs_length_matched_and_from_one_group(tmp_path: Path) -> None:
    rows: list[ScoredRollout] = []
    for g, task in enumerate(["a", "b"]):
        rows += [rollout(task, i, True, reply=text(g * 50 + i, words=20 + 2 * i)) for i in range(3)]
        rows += [
            rollout(task, 10 + i, False, reply=text(g * 50 + 10 + i, words=21 + 2 * i))
            for i in range(2)
        ]
        # a failing reply far longer than any pass: must stay unpaired
        rows.append(rollout(task, 20, False, reply=text(g * 50 + 20, words=400)))
    res = curate(rows)
    m = write_dataset(res, tmp_path)
    pairs = _read(tmp_path, "dpo.jsonl")
    assert len(pairs) == 4 and m.counts["dpo_rows"] == 4
    by_id = {r.rollout_id: r for r in rows}
    for p in pairs:
        chosen, rejected = by_id[p["chosen_rollout_id"]], by_id[p["rejected_rollout_id"]]
        assert chosen.task_key == rejected.task_key == p["task_key"]
        assert chosen.passed and not rejected.passed
        lc = completion_length(split_prompt(chosen.transcript)[1])
        lr = completion_length(split_prompt(rejected.transcript)[1])
        assert max(lc + 1, lr + 1) / min(lc + 1, lr + 1) <= 1.5
        assert p["chosen"][0]["role"] == "assistant" and p["prompt"][-1]["role"] == "user"
        assert p["same_prompt"] is True
    used = [p["chosen_rollout_id"] for p in pairs] + [p["rejected_rollout_id"] for p in pairs]
    assert len(used) == len(set(used))
    assert not any(by_id[u].transcript.conversation_id.endswith("c20") for u in used)
    for g in res.kept:
        for chosen, rejected, ratio in dpo_pairs(g, 1.5):
            assert chosen in g.rollouts and rejected in g.rollouts and ratio <= 1.5


def test_sft_rows_are_passes_with_assistant_mask(
    mixed_set: list[ScoredRollout], tmp_path: Path
) -> None:
    write_dataset(curate(mixed_set), tmp_path)
    rows = _read(tmp_path, "sft.jsonl")
    passing = {r.rollout_id for r in mixed_set if r.passed}
    assert len(rows) == len(passing) and {r["rollout_id"] for r in rows} == passing
    for r in rows:
        assert r["loss_mask"] == [1 if m["role"] == "assistant" else 0 for m in r["messages"]]
        assert r["policy_version"] == "pv1"
    tool_turn = rows[0]["messages"][2]
    assert tool_turn["tool_calls"][0]["function"] == {
        "name": "lookup",
        "arguments": orjson.dumps({"q": rows[0]["task_key"]}).decode(),
    }
    assert rows[0]["messages"][3]["tool_call_id"] == tool_turn["tool_calls"][0]["id"]


def test_lineage_reaches_conversations_and_sources(
    mixed_set: list[ScoredRollout], tmp_path: Path
) -> None:
    m = write_dataset(curate(mixed_set), tmp_path)
    grpo = [e for e in m.lineage if e.file == "grpo.jsonl"]
    assert [e.row for e in grpo] == [0, 1, 2]
    alpha = grpo[0]
    assert alpha.task_key == "alpha" and len(alpha.rollout_ids) == 4
    assert set(alpha.conversation_ids) == {f"alpha-c{i}" for i in range(4)}
    assert sorted(alpha.sources, key=lambda s: str(s["line"])) == [
        {"kind": "file", "file": "logs.jsonl", "line": i} for i in (1, 2, 3, 4)
    ]
    # the lists are aligned: rollout i came from conversation i and source i
    by_id = {r.rollout_id: r for r in mixed_set}
    for rid, cid, src in zip(alpha.rollout_ids, alpha.conversation_ids, alpha.sources, strict=True):
        assert (
            by_id[rid].conversation_id == cid and by_id[rid].transcript.source.line == src["line"]
        )
    assert sum(1 for e in m.lineage if e.file == "sft.jsonl") == m.files["sft.jsonl"].rows
    assert sum(1 for e in m.lineage if e.file == "dpo.jsonl") == m.files["dpo.jsonl"].rows


def test_next_steps_has_exact_commands_and_no_paths(
    mixed_set: list[ScoredRollout], tmp_path: Path
) -> None:
    res = curate(mixed_set)
    write_dataset(res, tmp_path)
    md = (tmp_path / "next_steps.md").read_text()
    assert f"rlstream train --dataset . --method {res.method}" in md
    for method in ("grpo", "dpo", "sft"):
        assert f"rlstream train --dataset . --method {method}" in md
    assert "--data.label_key label" in md and "assistant_only_loss=True" in md
    assert str(tmp_path) not in md


def test_empty_result_still_writes_a_valid_dataset(tmp_path: Path) -> None:
    res = curate(group("dead", 4, 0), CurateOptions())
    m = write_dataset(res, tmp_path)
    assert m.counts["kept_groups"] == 0 and m.files["grpo.jsonl"].rows == 0
    assert (tmp_path / "grpo.jsonl").read_bytes() == b""
    assert verify_dataset(tmp_path).dataset_id == m.dataset_id


@settings(
    max_examples=12, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(
    groups=st.lists(
        st.integers(1, 6).flatmap(lambda n: st.tuples(st.just(n), st.integers(0, n))),
        min_size=1,
        max_size=6,
    ),
    rnd=st.randoms(use_true_random=False),
)
def test_determinism_property(
    tmp_path: Path, groups: list[tuple[int, int]], rnd: random.Random
) -> None:
    rows = [r for g, (n, c) in enumerate(groups) for r in group(f"task{g}", n, c)]
    rows += rows[: rnd.randint(0, 3)]  # redelivered copies
    shuffled = rows[:]
    rnd.shuffle(shuffled)
    tag = rnd.getrandbits(32)
    a, b = tmp_path / f"a{tag}", tmp_path / f"b{tag}"
    ma, mb = write_dataset(curate(rows), a), write_dataset(curate(shuffled), b)
    assert ma.dataset_id == mb.dataset_id
    for f in FILES:
        assert (a / f).read_bytes() == (b / f).read_bytes()
