"""The manifest's method is one the trainer can run: curation and ``--method auto`` agree.

GRPO re-grades fresh samples with the dataset's reward. ``outcome`` reads the logged
outcome, which a fresh sample never has, so a release graded by it must not recommend GRPO
(the in-cluster trainer refused exactly that: "no GRPO row can be graded on fresh samples").
"""

from __future__ import annotations

from pathlib import Path

import pytest
from rollout_builders import text

from rlstream.curation import curate, write_dataset
from rlstream.grading import RewardSpec, SpecResolver, grade_one
from rlstream.rollout import ScoredRollout
from rlstream.training.data import read_rows, resolve_method
from rlstream.training.reward import gradeable
from rlstream.transcript import Message, Transcript

pytestmark = pytest.mark.unit


def _graded(spec: RewardSpec, *, outcome: bool) -> list[ScoredRollout]:
    """8 tasks x 6 rollouts, half passing in each: plenty of GRPO signal."""
    out = []
    for t in range(8):
        for i in range(6):
            ok = i % 2 == 0
            reply = f"{text(100 * t + i)} #### {7 if ok else 9}"
            tr = Transcript(
                conversation_id=f"t{t}-c{i}",
                messages=(
                    Message(role="user", content=f"What is {t} + {7 - t}? (task {t})"),
                    Message(role="assistant", content=reply),
                ),
                task_key=f"task{t}",
                label=None if outcome else "7",
                outcome={"resolved": ok} if outcome else {},
            )
            out.append(grade_one(tr, spec))
    return out


def test_outcome_graded_release_recommends_what_the_trainer_can_run(tmp_path: Path) -> None:
    result = curate(_graded(RewardSpec.from_names(["outcome"]), outcome=True))
    assert result.method == "grpo"  # what the reward signal alone suggests
    manifest = write_dataset(result, tmp_path)
    rows = read_rows(tmp_path, "grpo")
    assert rows and gradeable(rows, SpecResolver())[0] == []  # the trainer would refuse GRPO
    assert manifest.method == "dpo", manifest.method_reason
    assert "cannot grade a fresh sample" in manifest.method_reason
    assert resolve_method(manifest, "auto") == "dpo"
    assert "Recommended method: **dpo**" in (tmp_path / "next_steps.md").read_text()


def test_a_reward_that_grades_fresh_samples_keeps_grpo(tmp_path: Path) -> None:
    result = curate(_graded(RewardSpec.from_names(["gsm8k"]), outcome=False))
    manifest = write_dataset(result, tmp_path)
    assert manifest.method == result.method == "grpo"
    assert gradeable(read_rows(tmp_path, "grpo"), SpecResolver())[0]
    assert resolve_method(manifest, "auto") == "grpo"
