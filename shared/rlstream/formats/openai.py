"""OpenAI chat logs: ``messages`` with ``tool_calls`` / ``role=tool``, legacy
``function_call`` / ``role=function``, content-part lists, and request/response pairs."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from pydantic import JsonValue

from rlstream.errors import SchemaViolation
from rlstream.fastmodel import trusted
from rlstream.formats._build import build, link_tool_names, message_timestamp
from rlstream.formats._common import (
    as_text,
    jsonable,
    loads_maybe,
    require_dict,
    require_list,
    str_keys,
    tool_from_openai,
)
from rlstream.formats.pairs import checked_pair_kind, is_pair, responses_record
from rlstream.transcript.model import Message, Role, ToolCall, Transcript

_ROLES: dict[str, Role] = {
    "system": "system",
    "developer": "system",
    "user": "user",
    "human": "user",
    "assistant": "assistant",
    "ai": "assistant",
    "tool": "tool",
    "function": "tool",
    "ipython": "tool",
}
_MSG_KEYS = frozenset(
    {"role", "content", "tool_calls", "function_call", "tool_call_id", "name", "is_error"}
    | {"timestamp", "created_at", "time"}
)


def parse_call(raw: Any) -> ToolCall:
    """One ``tool_calls`` entry (or a legacy ``function_call`` object)."""
    call = require_dict(raw, "tool call")
    fn = call.get("function", call)
    fn = require_dict(fn, "tool call function")
    name = fn.get("name")
    if not isinstance(name, str):
        raise SchemaViolation("tool call without a function name")
    args = fn.get("arguments")
    raw_args = args if isinstance(args, str) else None
    extra = {k: jsonable(v) for k, v in call.items() if k not in ("id", "type", "function")}
    if fn is call:
        extra = {k: v for k, v in extra.items() if k not in ("name", "arguments")}
    else:
        extra.update(
            {f"function.{k}": jsonable(v) for k, v in fn.items() if k not in ("name", "arguments")}
        )
    cid = call.get("id")
    fields = {
        "id": None if cid is None else str(cid),
        "name": name,
        "arguments": jsonable(loads_maybe(args)),
        "raw_arguments": raw_args,
        "type": str(call.get("type") or "function"),
        "extra": extra,
    }
    if str_keys(extra):  # every other value is of its field's type by construction
        return trusted(ToolCall, fields)
    return ToolCall(**fields)


def split_content(content: Any, extra: dict[str, JsonValue]) -> str | None:
    """Text of a content value; part lists are kept verbatim in ``extra['content_parts']``."""
    if content is None or isinstance(content, str):
        return content
    if isinstance(content, list):
        extra["content_parts"] = jsonable(content)
        texts = [
            p.get("text") if isinstance(p, dict) else p
            for p in content
            if isinstance(p, str) or (isinstance(p, dict) and isinstance(p.get("text"), str))
        ]
        return "\n".join(t for t in texts if isinstance(t, str)) if texts else None
    extra["content_raw"] = jsonable(content)
    return as_text(content)


def parse_message(raw: Any) -> Message:
    msg = require_dict(raw, "message")
    role_raw = msg.get("role")
    role = _ROLES.get(str(role_raw).lower()) if role_raw is not None else None
    if role is None:
        raise SchemaViolation(f"unknown message role {role_raw!r}")
    extra: dict[str, JsonValue] = {k: jsonable(v) for k, v in msg.items() if k not in _MSG_KEYS}
    if role_raw != role:
        extra["original_role"] = jsonable(role_raw)
    calls: list[ToolCall] = []
    if msg.get("tool_calls"):
        calls = [parse_call(c) for c in require_list(msg["tool_calls"], "tool_calls")]
    elif msg.get("tool_calls") is not None:
        extra["tool_calls"] = jsonable(msg["tool_calls"])
    if msg.get("function_call"):
        legacy = parse_call(msg["function_call"])
        calls.append(
            legacy.model_copy(update={"extra": {**legacy.extra, "legacy": "function_call"}})
        )
    content = split_content(msg.get("content"), extra)
    tool_call_id = msg.get("tool_call_id")
    name = msg.get("name")
    fields = {
        "role": role,
        "content": content,
        "tool_calls": tuple(calls),
        "tool_call_id": None if tool_call_id is None else str(tool_call_id),
        "name": None if name is None else str(name),
        "is_error": bool(msg.get("is_error", False)),
        "timestamp": message_timestamp(msg, extra),
        "extra": extra,
    }
    if str_keys(extra):  # every other value is of its field's type by construction
        return trusted(Message, fields)
    return Message(**fields)


def parse_messages(raw: Any) -> list[Message]:
    return link_tool_names([parse_message(m) for m in require_list(raw, "messages")])


def _tools(record: Mapping[str, Any]) -> list[dict[str, JsonValue]]:
    raw = record.get("tools") or []
    legacy = record.get("functions") or []
    if not raw and not legacy:
        return []
    return _convert_tools([raw, legacy])


def _convert_tools(both: list[Any]) -> list[dict[str, JsonValue]]:
    return [tool_from_openai(t) for part in both for t in part]


def parse_openai(record: Mapping[str, Any]) -> Transcript:
    from rlstream.formats.openai_responses import is_responses_record, parse_responses

    if is_pair(record):
        if checked_pair_kind(record, "openai") == "openai_responses":
            return parse_responses(responses_record(record))
        return _parse_pair(record)

    if is_responses_record(record):
        return parse_responses(record)
    messages = parse_messages(record.get("messages"))
    consumed = {"messages", "tools", "functions"}
    meta: dict[str, Any] = {}
    choices = record.get("choices")
    if isinstance(choices, list) and choices and isinstance(choices[0], Mapping):
        first = choices[0]
        if isinstance(first.get("message"), Mapping):
            messages = link_tool_names([*messages, parse_message(first["message"])])
            consumed.add("choices")
            meta["choices"] = jsonable(
                [{k: v for k, v in first.items() if k != "message"}, *choices[1:]]
            )
    return build(
        record,
        fmt="openai",
        messages=messages,
        consumed=consumed,
        tools=_tools(record),
        metadata=meta,
    )


def _parse_pair(record: Mapping[str, Any]) -> Transcript:
    """A logged request/response pair (proxy logs, batch API output)."""
    request = require_dict(record["request"], "request")
    response = record.get("response") or {}
    if isinstance(response, Mapping) and isinstance(response.get("body"), Mapping):
        response = response["body"]
    messages = [parse_message(m) for m in require_list(request.get("messages"), "request.messages")]
    meta: dict[str, Any] = {
        "request": {k: v for k, v in request.items() if k not in ("messages", "tools", "functions")}
    }
    choices = response.get("choices") if isinstance(response, Mapping) else None
    if isinstance(choices, list) and choices and isinstance(choices[0], Mapping):
        if isinstance(choices[0].get("message"), Mapping):
            messages.append(parse_message(choices[0]["message"]))
        meta["response"] = {
            **{k: v for k, v in response.items() if k != "choices"},
            "choices": [{k: v for k, v in choices[0].items() if k != "message"}, *choices[1:]],
        }
    elif response:
        meta["response"] = response
    model = response.get("model") if isinstance(response, Mapping) else None
    model = model or request.get("model")
    consumed = {"request", "response"}
    cid = next((record[k] for k in ("id", "custom_id") if record.get(k)), None)
    if cid is not None:
        consumed.add("id" if record.get("id") else "custom_id")
    elif isinstance(response, Mapping) and response.get("id"):
        cid = response["id"]
    return build(
        record,
        fmt="openai",
        messages=link_tool_names(messages),
        consumed=consumed,
        tools=_tools(request),
        conversation_id=str(cid) if cid else None,
        model=None if model is None else str(model),
        metadata=meta,
    )
