"""A fresh sample graded by the dataset's own reward spec: the one question GRPO asks.

Curation asks it before recommending GRPO (``rlstream.curation.method``) and training asks
it for every sampled completion (``rlstream.training.reward``). It lives in ``grading``,
below both, so neither imports the other for it: a lazy import from curation into
training was a package cycle.

Each (prompt messages, completion, verifier label) becomes a :class:`Transcript` graded by
:func:`grade_one` with the label's context (gold label; the group's canonical tool calls as
the reference). The spec is rebuilt from the label's ``spec_id`` (refused when a reward
version or option differs), or found in the grader's reward config.
"""

from __future__ import annotations

import hashlib
from collections.abc import Sequence
from typing import Any

import orjson

from rlstream.errors import ConfigError, RlstreamError
from rlstream.formats.openai import parse_message
from rlstream.grading.grade import grade_one
from rlstream.grading.spec import SpecResolver
from rlstream.rewards.base import RewardContext
from rlstream.rollout import ScoredRollout
from rlstream.transcript import Message, Transcript


def parse_label(label: str) -> dict[str, Any]:
    """The verifier label of a grpo.jsonl row (curation/records.py ``verifier_label``)."""
    data = orjson.loads(label)
    if not isinstance(data, dict) or not isinstance(data.get("reward_spec"), str):
        raise ConfigError("a GRPO label without its reward_spec")
    return data


Completion = str | Sequence[dict[str, Any]]


def completion_messages(completion: Completion) -> list[Message]:
    """Text -> one assistant message; a message list (TRL's conversational completions,
    ``[{"role": "assistant", "content": s}]``, or a logged multi-turn tail) as parsed."""
    if isinstance(completion, str):
        return [Message(role="assistant", content=completion)]
    return [parse_message(dict(m)) for m in completion]


def sample_transcript(
    prompt: Sequence[dict[str, Any]],
    completion: Completion,
    label: dict[str, Any],
    tools: Sequence[dict[str, Any]] = (),
) -> tuple[Transcript, RewardContext]:
    """The sampled conversation (logged prompt + fresh completion) and its grading context."""
    msgs = [parse_message(m) for m in prompt]
    msgs.extend(completion_messages(completion))
    blob = orjson.dumps([prompt, completion], option=orjson.OPT_SORT_KEYS)
    task_key = label.get("task_key")
    transcript = Transcript(
        conversation_id=f"sample-{hashlib.sha256(blob).hexdigest()[:16]}",
        messages=tuple(msgs),
        task_key=task_key if isinstance(task_key, str) else None,
        tools=tuple(tools),
        label=label.get("label"),
    )
    expected = label.get("expected_tool_calls")
    reference = expected if isinstance(expected, list) and expected else None
    return transcript, RewardContext(label=label.get("label"), reference=reference)


def grade_sample(
    prompt: Sequence[dict[str, Any]],
    completion: Completion,
    label: str,
    specs: SpecResolver,
    tools: Sequence[dict[str, Any]] = (),
) -> ScoredRollout:
    """Grade one sample with the dataset's spec; reward errors propagate."""
    data = parse_label(label)
    transcript, context = sample_transcript(prompt, completion, data, tools)
    return grade_one(transcript, specs.for_id(data["reward_spec"]), context)


def fresh_sample_error(row: dict[str, Any], specs: SpecResolver) -> Exception | None:
    """Why this GRPO row's spec cannot grade a fresh sample, or None when it can.

    The row is probed with its group's reference answer as the completion: a spec that
    cannot be rebuilt (:class:`ConfigError`), or a reward that needs context a fresh sample
    never has (:class:`~rlstream.errors.RewardError`: ``outcome`` reads the *logged*
    outcome), fails here, before any training step. Curation asks the same question before
    it recommends GRPO (``rlstream.curation.method``).
    """
    try:
        data = parse_label(row["label"])
        grade_sample(
            row["prompt"],
            str(data.get("reference_answer") or ""),
            row["label"],
            specs,
            row.get("tools") or (),
        )
    except (RlstreamError, ValueError) as exc:
        return exc
    return None


def gradeable(
    rows: Sequence[dict[str, Any]], specs: SpecResolver
) -> tuple[list[dict[str, Any]], dict[str, int]]:
    """The GRPO rows whose spec can grade a fresh sample, and why the others cannot
    (:func:`fresh_sample_error`)."""
    keep: list[dict[str, Any]] = []
    skipped: dict[str, int] = {}
    for row in rows:
        exc = fresh_sample_error(row, specs)
        if exc is not None:
            reason = f"{type(exc).__name__}: {exc}"
            skipped[reason] = skipped.get(reason, 0) + 1
            continue
        keep.append(row)
    return keep, skipped
