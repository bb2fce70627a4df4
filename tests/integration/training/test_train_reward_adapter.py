"""GRPO's reward adapter grades (prompt, completion, label) exactly as the grader does."""

from __future__ import annotations

import json
from pathlib import Path

import orjson
import pytest

from rlstream.curation import CurateOptions, curate, write_dataset
from rlstream.curation.records import split_prompt
from rlstream.errors import ConfigError
from rlstream.grading import RewardSpec, SpecResolver, grade_many
from rlstream.rollout import ScoredRollout
from rlstream.training.reward import GrpoReward, grade_sample, gradeable

pytestmark = pytest.mark.train


def _scored(demo_dir: Path) -> list[ScoredRollout]:
    lines = (demo_dir / "out" / "scored.jsonl").read_bytes().splitlines()
    return [ScoredRollout.model_validate_json(line) for line in lines if line.strip()]


def _labels(dataset: Path) -> dict[str, dict[str, object]]:
    rows = [json.loads(line) for line in (dataset / "grpo.jsonl").read_text().splitlines()]
    return {r["task_key"]: r for r in rows}


def _compare(rollouts: list[ScoredRollout], rows: dict[str, dict], specs: SpecResolver) -> int:
    """Every rollout of a kept group, re-graded through the adapter, scores as graded."""
    n = 0
    for s in rollouts:
        row = rows.get(s.task_key)
        if row is None:
            continue
        prompt, completion = split_prompt(s.transcript)
        got = grade_sample(prompt, completion, row["label"], specs, list(s.transcript.tools))
        assert (got.score, got.passed) == (s.score, s.passed), s.rollout_id
        n += 1
    return n


def test_same_scores_as_the_grader_on_the_demo(demo_dir: Path, demo_dataset: Path) -> None:
    """gsm8k (spec rebuilt from its id) and nsr (options from the grader's rewards.yaml)."""
    scored = [s for s in _scored(demo_dir) if not s.reward_spec.startswith("customer_support")]
    specs = SpecResolver(config_path=demo_dir / "rewards.yaml")
    n = _compare(scored, _labels(demo_dataset), specs)
    kinds = {s.reward_spec.split("@")[0] for s in scored if s.task_key in _labels(demo_dataset)}
    assert kinds == {"gsm8k", "nsr"} and n >= 100


def test_same_scores_with_the_group_derived_tool_reference(demo_dir: Path, tmp_path: Path) -> None:
    """tool_calling takes its reference from the passing peers in the grader; the adapter
    from the label's canonical calls: same scores on every rollout of every kept group."""
    support = [s.transcript for s in _scored(demo_dir) if "tool_calling" in s.reward_spec]
    spec = RewardSpec.parse("customer_support,tool_calling")
    graded = [r for r in grade_many(support, spec) if isinstance(r, ScoredRollout)]
    write_dataset(curate(graded, CurateOptions(heldout_share=0.0)), tmp_path)
    assert _compare(graded, _labels(tmp_path), SpecResolver()) >= 20


def test_specs_that_cannot_grade_fresh_samples_are_refused_up_front(
    demo_dir: Path, demo_dataset: Path
) -> None:
    rows = [json.loads(line) for line in (demo_dataset / "grpo.jsonl").read_text().splitlines()]
    keep, skipped = gradeable(rows, SpecResolver())
    reasons = " | ".join(skipped)
    assert "outcome needs a logged outcome" in reasons  # support-bot: outcome reads the log
    assert "pass the grader's reward config" in reasons  # nsr: its policy option
    assert keep and all("gsm8k" in r["label"] for r in keep)
    keep, skipped = gradeable(rows, SpecResolver(config_path=demo_dir / "rewards.yaml"))
    assert "pass the grader's reward config" not in " | ".join(skipped)
    with pytest.raises(ConfigError, match="rebuilds as"):
        SpecResolver().for_id("gsm8k@0.9.0*1>=0.5#6ab8b5a6")


def test_trl_reward_callable_scores_counts_and_never_crashes_on_one_bad_sample(
    demo_dataset: Path,
) -> None:
    rows = [json.loads(line) for line in (demo_dataset / "grpo.jsonl").read_text().splitlines()]
    row = next(r for r in rows if "gsm8k" in r["label"])
    gold = orjson.loads(row["label"])["reference_answer"]
    reward = GrpoReward()
    scores = reward(
        prompts=[row["prompt"]] * 3,
        completions=[
            [{"role": "assistant", "content": gold}],
            [{"role": "assistant", "content": "no idea"}],
            [{"role": "assistant", "content": "x"}],
        ],
        label=[row["label"], row["label"], "not json"],
    )
    assert scores == [1.0, 0.0, 0.0]
    assert (reward.calls, reward.passed, reward.errors) == (3, 1, 1)
    assert reward.last_error
