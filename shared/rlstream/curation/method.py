"""The manifest recommends only a method the trainer can run on the dataset.

The profile picks a method from the reward signal alone (``rlstream.metrics.profile``):
enough mixed groups -> GRPO. GRPO also needs the reward to grade *fresh* samples, and a
reward that reads what was logged with the conversation (``outcome``: resolved, CSAT, a
task reward) cannot: the trainer drops every such row and refuses the run. So before the
manifest says GRPO, each GRPO row is probed with the trainer's own check
(:func:`rlstream.grading.samples.fresh_sample_error`) until one passes; when the reward
refuses every row, the recommendation falls back to DPO (the same mixed groups give logged
pass/fail pairs), then SFT. ``--method auto`` follows the manifest, so both agree.

A spec that cannot be rebuilt from its id (options only the grader's reward config
carries) is not the reward's fault: GRPO stays recommended and the trainer's error says to
pass ``--reward-config``.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from rlstream.errors import RewardError
from rlstream.grading import SpecResolver
from rlstream.grading.samples import fresh_sample_error
from rlstream.metrics import Method


def fit_method(
    method: Method, reason: str, grpo_rows: Sequence[dict[str, Any]], rows: dict[str, int]
) -> tuple[Method, str]:
    """``(method, reason)``, with GRPO replaced when its reward cannot grade fresh samples."""
    if method != "grpo" or not grpo_rows:
        return method, reason
    specs = SpecResolver()
    refusal: Exception | None = None
    for row in grpo_rows:
        exc = fresh_sample_error(row, specs)
        if exc is None or not isinstance(exc, RewardError):
            return method, reason
        refusal = exc
    why = (
        f"{reason}; but the reward cannot grade a fresh sample (no GRPO row can be "
        f"re-graded: {refusal}), so GRPO would have no reward"
    )
    if rows.get("dpo.jsonl"):
        return "dpo", f"{why}: train on the logged pass/fail pairs of the mixed groups"
    if rows.get("sft.jsonl"):
        return "sft", f"{why}: fine-tune on the passing conversations"
    return "none", f"{why}, and there are no pairs or passing conversations"
