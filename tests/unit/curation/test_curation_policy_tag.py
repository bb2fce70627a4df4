"""Rows carry the model that produced them (``policy``); the manifest counts rows per policy."""

from __future__ import annotations

from pathlib import Path

import orjson
import pytest
from rollout_builders import rollout

from rlstream.curation import CurateOptions, curate, verify_dataset, write_dataset
from rlstream.rollout import ScoredRollout

pytestmark = pytest.mark.unit


def served(r: ScoredRollout, model: str | None) -> ScoredRollout:
    """``r`` as if ``rlstream serve`` had logged it with ``model`` (no policy version)."""
    t = r.transcript.model_copy(update={"model": model, "policy_version": None})
    return r.model_copy(update={"transcript": t})


def _rows(d: Path, name: str) -> list[dict]:  # type: ignore[type-arg]
    return [orjson.loads(line) for line in (d / name).read_bytes().splitlines()]


def test_rows_and_manifest_carry_the_producing_model(tmp_path: Path) -> None:
    rollouts = [served(rollout("alpha", i, i < 2), "model-x") for i in range(4)]
    rollouts += [served(rollout("beta", 10 + i, i < 2), "model-y") for i in range(4)]
    rollouts += [served(rollout("gamma", 20 + i, i < 2), None) for i in range(4)]
    m = write_dataset(curate(rollouts, CurateOptions(heldout_share=0.0)), tmp_path)
    grpo = {r["task_key"]: r["policy"] for r in _rows(tmp_path, "grpo.jsonl")}
    assert grpo == {"alpha": "model-x", "beta": "model-y", "gamma": None}
    sft = _rows(tmp_path, "sft.jsonl")
    assert {r["task_key"]: r["policy"] for r in sft} == grpo
    dpo = _rows(tmp_path, "dpo.jsonl")
    assert dpo and {r["task_key"]: r["policy"] for r in dpo} == grpo
    assert m.policy_rows["grpo.jsonl"] == {"(none)": 1, "model-x": 1, "model-y": 1}
    assert m.policy_rows["sft.jsonl"] == {"(none)": 2, "model-x": 2, "model-y": 2}
    assert sum(m.policy_rows["dpo.jsonl"].values()) == m.counts["dpo_rows"]
    assert verify_dataset(tmp_path).policy_rows == m.policy_rows


def test_a_pair_of_two_models_is_on_policy_for_neither(tmp_path: Path) -> None:
    rollouts = [served(rollout("alpha", 0, True), "model-x")]
    rollouts += [served(rollout("alpha", 1, False), "model-y")]
    rollouts += [served(rollout("alpha", 2, True), "model-x")]
    rollouts += [served(rollout("alpha", 3, False), "model-x")]
    write_dataset(curate(rollouts, CurateOptions(heldout_share=0.0)), tmp_path)
    pairs = _rows(tmp_path, "dpo.jsonl")
    by_rejected = {r["rejected_rollout_id"]: r["policy"] for r in pairs}
    assert by_rejected[rollouts[1].rollout_id] is None
    assert by_rejected[rollouts[3].rollout_id] == "model-x"
    (grpo,) = _rows(tmp_path, "grpo.jsonl")
    assert grpo["policy"] == "model-x"  # the group's most common producer
