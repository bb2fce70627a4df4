"""What the generated ``reward_func.py`` calls inside the GPU image: grade one OpenRLHF
sample with its row's reward spec, through the builtin backend's GRPO adapter
(:func:`rlstream.training.reward.sample_transcript`) and the grader's ``grade_one``.

A spec is rebuilt from its ``spec_id`` (``name@version*weight>=threshold#options``) and
must reproduce that id exactly, so a changed reward version or a spec with options the id
cannot carry is refused instead of silently grading with something else; and it must be
one of the specs the run was planned with (the reward file lists them).
"""

from __future__ import annotations

import re
from collections.abc import Collection
from typing import Any

from rlstream.errors import InputError
from rlstream.grading import RewardSpec, SpecResolver, grade_one
from rlstream.rewards.base import RewardContext
from rlstream.training.openrlhf.dataset import LABEL_FORMAT
from rlstream.training.sample_label import unpack_label
from rlstream.transcript import Transcript

#: chat-template end markers vLLM leaves in the decoded query (skip_special_tokens=False)
_TRAILING_SPECIAL = re.compile(r"(?:\s*(?:<\|[^|<>\s]{1,40}\|>|</s>|<eos>|<end_of_turn>))+\s*$")
#: one resolver for the pod's life: each spec id is rebuilt (and checked) once
_SPECS = SpecResolver()


def spec_from_id(spec_id: str) -> RewardSpec:
    """Rebuild a RewardSpec from its id; refuse one whose rebuilt id differs."""
    return _SPECS.for_id(spec_id)


def completion_of(query: str, prompt: str) -> str:
    """The response part of OpenRLHF's decoded prompt+response, end markers stripped."""
    if not query.startswith(prompt):
        raise InputError("the query does not start with its prompt")
    return _TRAILING_SPECIAL.sub("", query[len(prompt) :])


def transcript_of(
    query: str, prompt: str, label: Any
) -> tuple[Transcript, RewardContext, dict[str, Any]]:
    """The sampled conversation (logged prompt messages + the completion), its grading
    context, and the row's verifier label."""
    from rlstream.training.reward import sample_transcript  # it imports spec_from_id

    messages, tools, context = unpack_label(label, LABEL_FORMAT)
    completion = completion_of(query, prompt)
    transcript, ctx = sample_transcript(messages, completion, context, tools)
    return transcript, ctx, context


def score_sample(
    query: Any, prompt: Any, label: Any, allowed_specs: Collection[str]
) -> tuple[float, bool]:
    """(score in [0, 1], passed) of one sample. Raises on bad input: the caller is total."""
    if not isinstance(query, str) or not isinstance(prompt, str):
        raise InputError("query and prompt must be strings")
    transcript, context, verifier = transcript_of(query, prompt, label)
    spec_id = verifier.get("reward_spec")
    if spec_id not in allowed_specs:
        raise InputError(f"reward spec {spec_id!r} is not one this run was planned with")
    scored = grade_one(transcript, spec_from_id(str(spec_id)), context)
    return float(scored.score), bool(scored.passed)
