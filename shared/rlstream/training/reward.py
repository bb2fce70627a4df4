"""GRPO's reward: the dataset's own reward spec, graded by the grader's code.

A thin adapter, not a second reward: each (prompt messages, sampled completion, verifier
label) becomes a :class:`Transcript` and goes through :func:`rlstream.grading.grade_one`
with the label's context (gold label; the group's canonical tool calls as the reference,
which is what group-aware rewards derived from the passing peers). The spec is rebuilt from
the ``spec_id`` stamped in the label (refused when a reward version or option differs), or
found in the grader's reward config for specs whose options the id cannot carry.

A sample the spec cannot grade scores 0.0 and is counted (``errors``, ``last_error``), so
one odd completion never kills a run; a batch where *every* sample fails raises, because
then the reward teaches nothing.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import orjson

from rlstream.errors import RlstreamError
from rlstream.grading import SpecResolver
from rlstream.grading.samples import (
    completion_messages,
    fresh_sample_error,
    grade_sample,
    gradeable,
    parse_label,
    sample_transcript,
)
from rlstream.training.config import TrainingError

__all__ = [
    "GrpoReward",
    "completion_messages",
    "fresh_sample_error",
    "grade_sample",
    "gradeable",
    "parse_label",
    "sample_transcript",
]


class GrpoReward:
    """The callable TRL's GRPOTrainer calls: ``(prompts, completions, **columns) -> scores``."""

    __name__ = "rlstream_reward"

    def __init__(self, specs: SpecResolver | None = None) -> None:
        self.specs = specs or SpecResolver()
        self.calls = 0
        self.errors = 0
        self.passed = 0
        self.last_error: str | None = None

    def __call__(
        self,
        prompts: Sequence[Any],
        completions: Sequence[Any],
        label: Sequence[str],
        tools_json: Sequence[str] | None = None,
        **_: Any,
    ) -> list[float]:
        scores: list[float] = []
        failed = 0
        for i, (prompt, completion) in enumerate(zip(prompts, completions, strict=True)):
            tools = orjson.loads(tools_json[i]) if tools_json else []
            try:
                scored = grade_sample(prompt, completion, label[i], self.specs, tools)
            except (RlstreamError, ValueError) as exc:
                failed += 1
                self.last_error = f"{type(exc).__name__}: {exc}"
                scores.append(0.0)
                continue
            self.passed += int(scored.passed)
            scores.append(float(scored.score))
        self.calls += len(scores)
        self.errors += failed
        if scores and failed == len(scores):
            raise TrainingError(
                f"the reward could not grade any of {failed} samples: {self.last_error}"
            )
        return scores
