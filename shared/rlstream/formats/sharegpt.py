"""ShareGPT logs: ``conversations`` of ``{"from", "value"}`` turns, including the
``function_call`` / ``observation`` roles (LLaMA-Factory style) and a top-level ``system`` /
``tools``. A ``gpt`` turn directly followed by ``function_call`` turns is one assistant
message that both spoke and called tools."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import orjson
from pydantic import JsonValue

from rlstream.errors import SchemaViolation
from rlstream.formats._build import build, message_timestamp
from rlstream.formats._common import (
    as_text,
    jsonable,
    loads_maybe,
    require_dict,
    require_list,
    tool_from_openai,
)
from rlstream.transcript.model import Message, Role, ToolCall, Transcript

_FROM: dict[str, Role] = {
    "system": "system",
    "human": "user",
    "user": "user",
    "gpt": "assistant",
    "assistant": "assistant",
    "chatgpt": "assistant",
    "bing": "assistant",
    "bard": "assistant",
    "model": "assistant",
    "observation": "tool",
    "tool": "tool",
    "function": "tool",
    "function_response": "tool",
    "ipython": "tool",
}
_CALL_FROM = frozenset({"function_call", "tool_call", "tool_calls"})
_DEFAULT_FROM = {"system": "system", "user": "human", "assistant": "gpt", "tool": "observation"}
_TURN_KEYS = frozenset({"from", "role", "value", "content", "tool_call_id", "name", "is_error"})
_TURN_KEYS_TS = _TURN_KEYS | {"timestamp", "created_at", "time"}


def _calls(value: Any) -> list[ToolCall]:
    decoded = loads_maybe(value)
    items = decoded if isinstance(decoded, list) else [decoded]
    out = []
    for item in items:
        call = require_dict(item, "function_call value")
        name = call.get("name")
        if not isinstance(name, str):
            raise SchemaViolation("function_call turn without a name")
        args = call.get("arguments", call.get("parameters"))
        cid = call.get("id")
        out.append(
            ToolCall(
                id=None if cid is None else str(cid),
                name=name,
                arguments=jsonable(loads_maybe(args)),
                raw_arguments=args if isinstance(args, str) else None,
                extra={
                    k: jsonable(v) for k, v in call.items() if k not in ("name", "arguments", "id")
                },
            )
        )
    return out


def _turns(turns: list[Any]) -> list[Message]:
    out: list[Message] = []
    last_call: str | None = None
    prev_turn_was_assistant = False
    for raw in turns:
        turn = require_dict(raw, "turn")
        who = str(turn.get("from", turn.get("role", "")))
        value = turn.get("value", turn.get("content"))
        extra: dict[str, JsonValue] = {
            k: jsonable(v) for k, v in turn.items() if k not in _TURN_KEYS_TS
        }
        if who in _CALL_FROM:
            calls = _calls(value)
            last_call = calls[-1].name if calls else last_call
            prev = out[-1] if out else None
            if prev is not None and prev_turn_was_assistant and prev.role == "assistant":
                out[-1] = prev.model_copy(update={"tool_calls": (*prev.tool_calls, *calls)})
            else:
                ts = message_timestamp(turn, extra)
                out.append(
                    Message(
                        role="assistant",
                        content=None,
                        tool_calls=tuple(calls),
                        is_error=bool(turn.get("is_error", False)),
                        timestamp=ts,
                        extra=extra,
                    )
                )
            prev_turn_was_assistant = True
            continue
        role = _FROM.get(who.lower())
        if role is None:
            raise SchemaViolation(f"unknown ShareGPT speaker {who!r}")
        if who != _DEFAULT_FROM[role]:
            extra["from"] = who
        name = turn.get("name")
        if role == "tool" and name is None:
            name = last_call
        tcid = turn.get("tool_call_id")
        if not isinstance(value, str) and value is not None:
            extra["content_raw"] = jsonable(value)
        out.append(
            Message(
                role=role,
                content=as_text(value) if value is not None else "",
                tool_call_id=None if tcid is None else str(tcid),
                name=None if name is None else str(name),
                is_error=bool(turn.get("is_error", False)),
                timestamp=message_timestamp(turn, extra),
                extra=extra,
            )
        )
        prev_turn_was_assistant = role == "assistant"
    return out


def _tools(value: Any) -> list[dict[str, JsonValue]]:
    if value is None:
        return []
    decoded = loads_maybe(value)
    if isinstance(decoded, str):
        try:
            decoded = orjson.loads(decoded)
        except orjson.JSONDecodeError:
            return [{"name": decoded}]
    items = decoded if isinstance(decoded, list) else [decoded]
    return [tool_from_openai(t) for t in items]


def parse_sharegpt(record: Mapping[str, Any]) -> Transcript:
    turns = record.get("conversations", record.get("conversation"))
    messages = _turns(require_list(turns, "conversations"))
    system = record.get("system")
    if isinstance(system, str) and system:
        messages.insert(0, Message(role="system", content=system))
    consumed = {"conversations", "conversation", "system", "tools"}
    return build(
        record,
        fmt="sharegpt",
        messages=messages,
        consumed=consumed,
        tools=_tools(record.get("tools")),
    )
