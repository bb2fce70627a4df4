"""What the generated verl reward file calls inside the GPU image: grade one sample with
its row's reward spec through the builtin backend's GRPO adapter
(:func:`rlstream.training.reward.sample_transcript`) and the grader's ``grade_one``.

The spec is rebuilt from its ``spec_id`` and must reproduce it exactly
(:func:`rlstream.training.openrlhf.reward_runtime.spec_from_id`), and must be one of the
specs the run was planned with (the reward file lists them).
"""

from __future__ import annotations

from collections.abc import Collection
from typing import Any

from rlstream.errors import InputError
from rlstream.grading import grade_one
from rlstream.training.openrlhf.reward_runtime import spec_from_id
from rlstream.training.sample_label import unpack_label
from rlstream.training.verl.dataset import LABEL_FORMAT


def score_solution(
    solution: Any, ground_truth: Any, allowed_specs: Collection[str]
) -> tuple[float, bool]:
    """(score in [0, 1], passed) of one decoded response. Raises on bad input: the caller
    (the reward file) is total."""
    from rlstream.training.reward import sample_transcript  # it imports the grader

    if not isinstance(solution, str):
        raise InputError("the solution must be a string")
    messages, tools, context = unpack_label(ground_truth, LABEL_FORMAT)
    spec_id = context.get("reward_spec")
    if spec_id not in allowed_specs:
        raise InputError(f"reward spec {spec_id!r} is not one this run was planned with")
    transcript, ctx = sample_transcript(messages, solution, context, tools)
    scored = grade_one(transcript, spec_from_id(str(spec_id)), ctx)
    return float(scored.score), bool(scored.passed)
