"""A model's reply text -> OpenAI ``content`` + ``tool_calls``.

Models trained by rlstream write tool calls as fenced JSON after their text (the training
template, ``rlstream.training.chat``), the same form the rewards and the evaluation read
(``rlstream.rewards.toolcalls.calls_in_text``). The server parses replies with that reader,
so a call the evaluator counted is a call the client receives. Fenced blocks that parse as
calls are removed from ``content``; any other text (or a fence that is not a call) stays.
"""

from __future__ import annotations

import re
import uuid

import orjson

from rlstream.rewards.toolcalls import calls_in_text
from rlstream.serving.api import FunctionCall, ToolCallOut

# Bounded by max_tokens: the reply is at most a few thousand characters.
_FENCE = re.compile(r"```[ \t]*(?:json|tool_call|tool|function)?[ \t]*\n?(.*?)```", re.S | re.I)


def new_call_id() -> str:
    return "call_" + uuid.uuid4().hex[:24]


def split_reply(text: str) -> tuple[str | None, list[ToolCallOut]]:
    """(content, tool calls) of a reply; content is None when only calls remain."""
    calls: list[ToolCallOut] = []
    kept: list[str] = []
    pos = 0
    for m in _FENCE.finditer(text):
        found = calls_in_text(m.group(0))
        if not found:
            continue
        kept.append(text[pos : m.start()])
        pos = m.end()
        for name, args in found:
            raw = args.get("__raw__") if isinstance(args, dict) else None
            arguments = raw if isinstance(raw, str) else orjson.dumps(args).decode()
            calls.append(
                ToolCallOut(id=new_call_id(), function=FunctionCall(name=name, arguments=arguments))
            )
    kept.append(text[pos:])
    content = "".join(kept).strip()
    return (content or None) if calls else text, calls


def fence_start(text: str) -> int:
    """Where a (possibly unfinished) fence begins in streamed text, else -1: the streamer
    holds text back from there until it knows whether the block is a tool call. A lone
    trailing backtick or two may be the start of a fence too."""
    i = text.find("```")
    if i >= 0:
        return i
    for k in (2, 1):
        if text.endswith("`" * k):
            return len(text) - k
    return -1
