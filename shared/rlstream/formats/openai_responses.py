"""OpenAI Responses API logs: ``instructions`` + ``input`` / ``output`` item lists.

Items are messages (``input_text`` / ``output_text`` parts), ``function_call`` items (linked
by ``call_id``) and ``function_call_output`` items; a function call that follows an
assistant message item joins that message, as one assistant turn that spoke and called.
Other items (reasoning, web search ...) are kept in ``metadata["other_items"]``.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from pydantic import JsonValue

from rlstream.errors import SchemaViolation
from rlstream.formats import openai as oa
from rlstream.formats._build import build, link_tool_names
from rlstream.formats._common import as_text, jsonable, loads_maybe, require_dict, tool_from_openai
from rlstream.transcript.model import Message, ToolCall, Transcript

_TEXT_PARTS = frozenset({"input_text", "output_text", "text"})


def is_responses_record(record: Mapping[str, Any]) -> bool:
    if "messages" in record:
        return False
    if record.get("object") == "response":
        return True
    items = record.get("input")
    return isinstance(items, list | str) and ("output" in record or "instructions" in record)


def _content(content: Any, extra: dict[str, JsonValue]) -> str | None:
    if content is None or isinstance(content, str):
        return content
    if isinstance(content, list):
        texts = [
            p.get("text")
            for p in content
            if isinstance(p, Mapping) and p.get("type") in _TEXT_PARTS
        ]
        only_text = len(texts) == len(content) and all(set(p) <= {"type", "text"} for p in content)
        if not (only_text and len(texts) == 1):
            extra["content_parts"] = jsonable(content)
        return "\n".join(str(t) for t in texts if t is not None) if texts else None
    extra["content_raw"] = jsonable(content)
    return as_text(content)


def _call(item: Mapping[str, Any]) -> ToolCall:
    name = item.get("name")
    if not isinstance(name, str):
        raise SchemaViolation("function_call item without a name")
    args = item.get("arguments")
    cid = item.get("call_id", item.get("id"))
    extra = {
        k: jsonable(v) for k, v in item.items() if k not in ("type", "call_id", "name", "arguments")
    }
    return ToolCall(
        id=None if cid is None else str(cid),
        name=name,
        arguments=jsonable(loads_maybe(args)),
        raw_arguments=args if isinstance(args, str) else None,
        extra=extra,
    )


def _items(items: Any, out: list[Message], other: list[Any]) -> None:
    if isinstance(items, str):
        out.append(Message(role="user", content=items))
        return
    if not isinstance(items, list):
        raise SchemaViolation("input/output must be a list of items")
    for raw in items:
        item = require_dict(raw, "item")
        kind = item.get("type", "message" if "role" in item else None)
        if kind == "message":
            role_raw = str(item.get("role", "user"))
            role = oa._ROLES.get(role_raw)
            if role is None:
                raise SchemaViolation(f"unknown message role {role_raw!r}")
            extra = {
                k: jsonable(v) for k, v in item.items() if k not in ("type", "role", "content")
            }
            if role_raw != role:
                extra["original_role"] = role_raw
            out.append(
                Message(role=role, content=_content(item.get("content"), extra), extra=extra)
            )
        elif kind == "function_call":
            call = _call(item)
            prev = out[-1] if out else None
            if prev is not None and prev.role == "assistant":
                out[-1] = prev.model_copy(update={"tool_calls": (*prev.tool_calls, call)})
            else:
                out.append(Message(role="assistant", tool_calls=(call,)))
        elif kind == "function_call_output":
            cid = item.get("call_id")
            output = item.get("output")
            extra = {
                k: jsonable(v) for k, v in item.items() if k not in ("type", "call_id", "output")
            }
            if output is not None and not isinstance(output, str):
                extra["content_raw"] = jsonable(output)
            out.append(
                Message(
                    role="tool",
                    content=as_text(output),
                    tool_call_id=None if cid is None else str(cid),
                    extra=extra,
                )
            )
        else:
            other.append(item)


def parse_responses(record: Mapping[str, Any]) -> Transcript:
    messages: list[Message] = []
    instructions = record.get("instructions")
    if isinstance(instructions, str) and instructions:
        messages.append(Message(role="system", content=instructions))
    other: list[Any] = []
    _items(record.get("input", []), messages, other)
    if record.get("output") is not None:
        _items(record.get("output"), messages, other)
    meta: dict[str, Any] = {"other_items": other} if other else {}
    if instructions is not None and not isinstance(instructions, str):
        meta["instructions"] = instructions
    tools = [tool_from_openai(t) for t in record.get("tools") or []]
    return build(
        record,
        fmt="openai",
        messages=link_tool_names(messages),
        consumed={"instructions", "input", "output", "tools"},
        tools=tools,
        metadata=meta,
    )
