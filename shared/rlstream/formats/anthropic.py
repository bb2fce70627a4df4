"""Anthropic Messages logs: top-level ``system``, content blocks ``text`` / ``tool_use`` /
``tool_result`` (with ``is_error``). A user turn carrying tool results becomes one canonical
``role="tool"`` message per result, in order, so results link to calls by id."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from pydantic import JsonValue

from rlstream.errors import SchemaViolation
from rlstream.formats._build import build, link_tool_names, message_timestamp
from rlstream.formats._common import (
    as_text,
    jsonable,
    require_dict,
    require_list,
    tool_from_anthropic,
)
from rlstream.formats.pairs import anthropic_record, checked_pair_kind, is_pair
from rlstream.transcript.model import Message, ToolCall, Transcript

_MSG_KEYS = frozenset({"role", "content", "name", "is_error", "timestamp", "created_at", "time"})
_SIMPLE_TEXT = frozenset({"type", "text"})


def _result_text(content: Any, extra: dict[str, JsonValue]) -> str | None:
    if content is None or isinstance(content, str):
        return content
    if isinstance(content, list) and all(
        isinstance(b, dict) and b.get("type") == "text" and set(b) <= _SIMPLE_TEXT for b in content
    ):
        if len(content) != 1:
            extra["content_blocks"] = jsonable(content)
        return "\n".join(str(b.get("text", "")) for b in content)
    extra["content_raw"] = jsonable(content)
    return as_text(content)


def _tool_result(block: Mapping[str, Any]) -> Message:
    extra: dict[str, JsonValue] = {
        k: jsonable(v)
        for k, v in block.items()
        if k not in ("type", "tool_use_id", "content", "is_error", "name", "timestamp")
    }
    tid = block.get("tool_use_id")
    return Message(
        role="tool",
        content=_result_text(block.get("content"), extra),
        tool_call_id=None if tid is None else str(tid),
        name=None if block.get("name") is None else str(block["name"]),
        is_error=bool(block.get("is_error", False)),
        timestamp=message_timestamp(block, extra),
        extra=extra,
    )


def _tool_use(block: Mapping[str, Any]) -> ToolCall:
    name = block.get("name")
    if not isinstance(name, str):
        raise SchemaViolation("tool_use block without a name")
    bid = block.get("id")
    return ToolCall(
        id=None if bid is None else str(bid),
        name=name,
        arguments=jsonable(block.get("input")),
        extra={
            k: jsonable(v) for k, v in block.items() if k not in ("type", "id", "name", "input")
        },
    )


def parse_message(raw: Any) -> list[Message]:
    """One Anthropic message -> one or more canonical messages (tool results split out)."""
    msg = require_dict(raw, "message")
    role = msg.get("role")
    if role not in ("user", "assistant", "system"):
        raise SchemaViolation(f"unknown message role {role!r}")
    extra: dict[str, JsonValue] = {k: jsonable(v) for k, v in msg.items() if k not in _MSG_KEYS}
    content = msg.get("content")
    ts = message_timestamp(msg, extra)
    name = None if msg.get("name") is None else str(msg["name"])
    if content is None or isinstance(content, str):
        return [Message(role=role, content=content, name=name, timestamp=ts, extra=extra)]
    blocks = require_list(content, "content")
    out: list[Message] = []
    texts: list[str] = []
    calls: list[ToolCall] = []
    plain = True
    for block in blocks:
        b = require_dict(block, "content block")
        kind = b.get("type")
        if kind == "tool_result":
            out.append(_tool_result(b))
            continue
        if kind == "text":
            texts.append(str(b.get("text", "")))
            plain = plain and set(b) <= _SIMPLE_TEXT and not calls
        elif kind == "tool_use":
            calls.append(_tool_use(b))
        else:  # thinking, image, document, server tools: kept verbatim
            plain = False
    has_own = texts or calls or not out
    if has_own:
        own_blocks = [b for b in blocks if b.get("type") != "tool_result"]
        if not plain or len(texts) > 1:
            extra["content_blocks"] = jsonable(own_blocks)
        text = "\n".join(texts) if texts else None
        if text is None and not calls and not own_blocks:
            text = ""
        own = Message(
            role=role,
            content=text,
            tool_calls=tuple(calls),
            name=name,
            is_error=bool(msg.get("is_error", False)),
            timestamp=ts,
            extra=extra,
        )
        out.append(own)
    return out


def _system(value: Any) -> list[Message]:
    if value is None:
        return []
    if isinstance(value, str):
        return [Message(role="system", content=value)]
    out = []
    for block in require_list(value, "system"):
        b = require_dict(block, "system block")
        extra = {k: jsonable(v) for k, v in b.items() if k not in ("type", "text", "timestamp")}
        if b.get("type", "text") != "text":
            extra["type"] = jsonable(b.get("type"))
        out.append(
            Message(
                role="system",
                content=None if b.get("text") is None else str(b["text"]),
                timestamp=message_timestamp(b, extra),
                extra=extra,
            )
        )
    return out


def parse_anthropic(record: Mapping[str, Any]) -> Transcript:
    if is_pair(record):
        checked_pair_kind(record, "anthropic")
        record = anthropic_record(record)
    messages = _system(record.get("system"))
    for m in require_list(record.get("messages"), "messages"):
        messages.extend(parse_message(m))
    consumed = {"system", "messages", "tools"}
    response = record.get("response")
    if isinstance(response, Mapping) and response.get("type") == "message":
        messages.extend(parse_message({"role": "assistant", **response}))
        consumed.add("response")
    tools = [tool_from_anthropic(t) for t in record.get("tools") or []]
    return build(
        record, fmt="anthropic", messages=link_tool_names(messages), consumed=consumed, tools=tools
    )
