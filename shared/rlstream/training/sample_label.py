"""The self-contained label an external trainer hands back to rlstream's reward file.

OpenRLHF and verl pass their reward function only one opaque per-row string next to the
sampled text (OpenRLHF: ``label``; verl: ``reward_model.ground_truth``), so that string
carries everything the grader needs: the prompt messages, the declared tools and the
dataset's own verifier label. Each backend stamps its own ``format`` tag, checked on read,
so a file written for one backend is never graded by the other's reward file.
"""

from __future__ import annotations

from typing import Any

import orjson

from rlstream.errors import InputError


def pack_label(row: dict[str, Any], line: int, fmt: str) -> str:
    """A grpo.jsonl row's prompt, tools and verifier label as one sorted JSON string."""
    raw = row.get("label")
    try:
        context = orjson.loads(raw) if isinstance(raw, str) else raw
    except orjson.JSONDecodeError as exc:
        raise InputError(f"grpo.jsonl row {line}: label is not JSON ({exc})") from exc
    if not isinstance(context, dict):
        raise InputError(f"grpo.jsonl row {line}: label is not a JSON object")
    label = {
        "format": fmt,
        "messages": row["prompt"],
        "tools": row.get("tools") or [],
        "context": context,
    }
    return orjson.dumps(label, option=orjson.OPT_SORT_KEYS).decode()


def unpack_label(label: Any, fmt: str) -> tuple[list[Any], list[Any], dict[str, Any]]:
    """(prompt messages, tools, verifier label) of a packed label; InputError otherwise."""
    if not isinstance(label, str):
        raise InputError(f"the label is a {type(label).__name__}, not a JSON string")
    try:
        data = orjson.loads(label)
    except orjson.JSONDecodeError as exc:
        raise InputError(f"the label is not JSON: {exc}") from exc
    if not isinstance(data, dict) or data.get("format") != fmt:
        raise InputError(f"the label is not an {fmt} label")
    context, messages, tools = data.get("context"), data.get("messages"), data.get("tools")
    if not isinstance(context, dict) or not isinstance(messages, list):
        raise InputError("the label lacks its context or prompt messages")
    if not isinstance(tools, list):
        raise InputError("the label's tools are not a list")
    return messages, tools, context
