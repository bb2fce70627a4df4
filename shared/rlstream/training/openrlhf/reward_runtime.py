"""What the generated ``reward_func.py`` calls inside the GPU image: grade one OpenRLHF
sample with the dataset's own reward spec, through the same ``grade_one`` the grader runs.

The spec is rebuilt from its ``spec_id`` (``name@version*weight>=threshold#options``) and
must reproduce that id exactly, so a changed reward version or a spec with options the id
cannot carry is refused instead of silently grading with something else. The completion
goes in as assistant text; rewards that read tool calls find them in it as they do in
logged text (fenced JSON), so there is no second parser here.
"""

from __future__ import annotations

import hashlib
import re
from typing import Any

import orjson

from rlstream.errors import ConfigError, InputError
from rlstream.formats.openai import parse_message
from rlstream.grading import RewardSpec, grade_one
from rlstream.rewards.base import RewardContext
from rlstream.training.openrlhf.dataset import LABEL_FORMAT
from rlstream.transcript import Message, Transcript

_ITEM = re.compile(r"^(?P<name>[^@]+)@(?P<version>[^*]+)\*(?P<weight>[^>]+)>=(?P<thr>[^#]+)#")
#: chat-template end markers vLLM leaves in the decoded query (skip_special_tokens=False)
_TRAILING_SPECIAL = re.compile(r"(?:\s*(?:<\|[^|<>\s]{1,40}\|>|</s>|<eos>|<end_of_turn>))+\s*$")
_SPECS: dict[str, RewardSpec] = {}


def spec_from_id(spec_id: str) -> RewardSpec:
    """Rebuild a RewardSpec from its id; refuse one whose rebuilt id differs."""
    cached = _SPECS.get(spec_id)
    if cached is not None:
        return cached
    names: list[str] = []
    weights: dict[str, float] = {}
    thresholds: dict[str, float] = {}
    for part in spec_id.split("+"):
        m = _ITEM.match(part)
        if m is None:
            raise ConfigError(f"not a reward spec id: {spec_id!r}")
        name = m["name"]
        names.append(name)
        weights[name] = float(m["weight"])
        thresholds[name] = float(m["thr"])
    spec = RewardSpec.from_names(names, weights, thresholds=thresholds)
    if spec.spec_id != spec_id:
        raise ConfigError(
            f"reward spec {spec_id!r} rebuilds as {spec.spec_id!r}: a reward version or its "
            "options differ from what graded the dataset"
        )
    _SPECS[spec_id] = spec
    return spec


def completion_of(query: str, prompt: str) -> str:
    """The response part of OpenRLHF's decoded prompt+response, end markers stripped."""
    if not query.startswith(prompt):
        raise InputError("the query does not start with its prompt")
    return _TRAILING_SPECIAL.sub("", query[len(prompt) :])


def transcript_of(query: str, prompt: str, label: Any) -> tuple[Transcript, RewardContext]:
    """The sampled conversation (logged prompt messages + the completion) and its context."""
    if not isinstance(label, str):
        raise InputError(f"the label is a {type(label).__name__}, not a JSON string")
    try:
        data = orjson.loads(label)
    except orjson.JSONDecodeError as exc:
        raise InputError(f"the label is not JSON: {exc}") from exc
    if not isinstance(data, dict) or data.get("format") != LABEL_FORMAT:
        raise InputError(f"the label is not an {LABEL_FORMAT} label")
    context = data.get("context")
    messages = data.get("messages")
    if not isinstance(context, dict) or not isinstance(messages, list):
        raise InputError("the label lacks its context or prompt messages")
    tools = data.get("tools") or []
    if not isinstance(tools, list):
        raise InputError("the label's tools are not a list")
    msgs = [parse_message(m) for m in messages]
    msgs.append(Message(role="assistant", content=completion_of(query, prompt)))
    digest = hashlib.sha256(query.encode("utf-8", "replace")).hexdigest()[:16]
    task_key = context.get("task_key")
    transcript = Transcript(
        conversation_id=f"openrlhf-{digest}",
        messages=tuple(msgs),
        task_key=task_key if isinstance(task_key, str) else None,
        tools=tuple(tools),  # already rlstream's tool shape (grpo.jsonl)
    )
    expected = context.get("expected_tool_calls")
    reference = expected if isinstance(expected, list) and expected else None
    return transcript, RewardContext(label=context.get("label"), reference=reference)


def score_sample(query: Any, prompt: Any, label: Any, spec_id: str) -> tuple[float, bool]:
    """(score in [0, 1], passed) of one sample. Raises on bad input: the caller is total."""
    if not isinstance(query, str) or not isinstance(prompt, str):
        raise InputError("query and prompt must be strings")
    transcript, context = transcript_of(query, prompt, label)
    scored = grade_one(transcript, spec_from_id(spec_id), context)
    return float(scored.score), bool(scored.passed)
