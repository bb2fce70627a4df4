"""Google Gemini / Vertex AI logs: ``contents`` of ``{"role", "parts"}`` with ``text``,
``functionCall`` and ``functionResponse`` parts, ``systemInstruction`` and
``tools[].functionDeclarations`` (camelCase REST or snake_case SDK spelling), optionally with
the ``candidates`` of the response. Tool results link to calls by ``id`` when the log has one,
else by name (the canonical messages keep the name either way).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from pydantic import JsonValue

from rlstream.errors import SchemaViolation
from rlstream.formats._build import build, link_tool_names, message_timestamp
from rlstream.formats._common import as_text, jsonable, require_dict, require_list, ts_out
from rlstream.transcript.model import Message, ToolCall, Transcript

_ROLE = {
    "user": "user",
    "model": "assistant",
    "assistant": "assistant",
    "function": "user",
    "tool": "user",
}
_CONTENT_KEYS = frozenset({"role", "parts", "timestamp", "created_at", "time"})
_RESULT_KEYS = ("content", "result", "output")


def _get(d: Mapping[str, Any], camel: str, snake: str) -> Any:
    return d[camel] if camel in d else d.get(snake)


def is_gemini_record(record: Mapping[str, Any]) -> bool:
    contents = record.get("contents")
    if isinstance(contents, list) and (
        not contents or (isinstance(contents[0], Mapping) and "parts" in contents[0])
    ):
        return True
    return "candidates" in record and ("contents" in record or "systemInstruction" in record)


def _result(part: Mapping[str, Any], fr: Mapping[str, Any]) -> Message:
    response = fr.get("response")
    extra: dict[str, JsonValue] = {
        k: jsonable(v) for k, v in fr.items() if k not in ("name", "response", "id")
    }
    extra.update(
        {
            k: jsonable(v)
            for k, v in part.items()
            if k not in ("functionResponse", "function_response", "is_error", "timestamp")
        }
    )
    content: str | None
    if isinstance(response, Mapping) and len(response) == 1:
        ((key, value),) = response.items()
        if key in _RESULT_KEYS and isinstance(value, str):
            content = value
            if key != "content":
                extra["response_key"] = key
        else:
            content, extra["content_raw"] = as_text(response), jsonable(response)
    else:
        content = as_text(response)
        if response is not None and not isinstance(response, str):
            extra["content_raw"] = jsonable(response)
    rid = fr.get("id")
    return Message(
        role="tool",
        content=content,
        tool_call_id=None if rid is None else str(rid),
        name=None if fr.get("name") is None else str(fr["name"]),
        is_error=bool(part.get("is_error", False)),
        timestamp=message_timestamp(part, extra),
        extra=extra,
    )


def _content(raw: Any) -> list[Message]:
    c = require_dict(raw, "content")
    role_raw = str(c.get("role", "user"))
    role = _ROLE.get(role_raw)
    if role is None:
        raise SchemaViolation(f"unknown Gemini role {role_raw!r}")
    extra: dict[str, JsonValue] = {k: jsonable(v) for k, v in c.items() if k not in _CONTENT_KEYS}
    ts = message_timestamp(c, extra)
    texts: list[str] = []
    calls: list[ToolCall] = []
    results: list[Message] = []
    odd: list[Any] = []
    for part in require_list(c.get("parts", []), "parts"):
        p = require_dict(part, "part")
        fc = _get(p, "functionCall", "function_call")
        fr = _get(p, "functionResponse", "function_response")
        if isinstance(fc, Mapping):
            cid = fc.get("id")
            calls.append(
                ToolCall(
                    id=None if cid is None else str(cid),
                    name=str(fc.get("name")),
                    arguments=jsonable(fc.get("args")),
                    extra={
                        k: jsonable(v) for k, v in fc.items() if k not in ("id", "name", "args")
                    },
                )
            )
        elif isinstance(fr, Mapping):
            results.append(_result(p, fr))
        elif isinstance(p.get("text"), str) and set(p) == {"text"}:
            texts.append(p["text"])
        else:  # thoughts, inline data, code execution ...: kept verbatim
            odd.append(p)
            if isinstance(p.get("text"), str) and not p.get("thought"):
                texts.append(p["text"])
    if odd:
        extra["other_parts"] = jsonable(odd)
    if results and not texts and not calls:
        return results
    own = Message(
        role="assistant" if role == "assistant" else "user",
        content="\n".join(texts) if texts else None,
        tool_calls=tuple(calls),
        timestamp=ts,
        extra=extra,
    )
    return [*results, own]


def _tools(value: Any) -> list[dict[str, JsonValue]]:
    out: list[dict[str, JsonValue]] = []
    for tool in value or []:
        t = require_dict(tool, "tool")
        decls = _get(t, "functionDeclarations", "function_declarations")
        if isinstance(decls, list):
            out.extend(jsonable(d) for d in decls if isinstance(d, Mapping))  # type: ignore[misc]
        else:
            out.append({"x_gemini_tool": jsonable(t)})
    return out


def parse_gemini(record: Mapping[str, Any]) -> Transcript:
    messages: list[Message] = []
    system = _get(record, "systemInstruction", "system_instruction")
    if isinstance(system, str):
        messages.append(Message(role="system", content=system))
    elif isinstance(system, Mapping):
        for part in system.get("parts", []) or []:
            if isinstance(part, Mapping):
                messages.append(Message(role="system", content=as_text(part.get("text"))))
    for raw in require_list(record.get("contents", []), "contents"):
        messages.extend(_content(raw))
    meta: dict[str, Any] = {}
    candidates = record.get("candidates")
    if isinstance(candidates, list) and candidates and isinstance(candidates[0], Mapping):
        first = candidates[0]
        if isinstance(first.get("content"), Mapping):
            messages.extend(_content({"role": "model", **first["content"]}))
        meta["candidates"] = [{k: v for k, v in first.items() if k != "content"}, *candidates[1:]]
    model = record.get("model") or record.get("modelVersion")
    return build(
        record,
        fmt="gemini",
        messages=link_tool_names(messages),
        consumed={
            "contents", "systemInstruction", "system_instruction", "tools", "candidates",
            "model", "modelVersion",
        },
        tools=_tools(record.get("tools")),
        model=None if model is None else str(model),
        metadata=meta,
    )  # fmt: skip


# --- emitter -------------------------------------------------------------------------------


def _tail(m: Message, out: dict[str, Any], skip: frozenset[str] = frozenset()) -> None:
    if m.timestamp is not None:
        out["timestamp"] = ts_out(m.timestamp)
    for k, v in m.extra.items():
        if k not in skip and k not in out:
            out[k] = v


def _response_part(m: Message) -> dict[str, Any]:
    response: Any
    if "content_raw" in m.extra:
        response = m.extra["content_raw"]
    else:
        response = {str(m.extra.get("response_key", "content")): m.content}
    fr: dict[str, Any] = {"name": m.name, "response": response}
    if m.tool_call_id is not None:
        fr["id"] = m.tool_call_id
    part: dict[str, Any] = {"functionResponse": fr}
    if m.is_error:
        part["is_error"] = True
    _tail(m, part, frozenset({"content_raw", "response_key"}))
    return part


def to_gemini(t: Transcript, common: dict[str, Any]) -> dict[str, Any]:
    system = [m for m in t.messages if m.role == "system"]
    contents: list[dict[str, Any]] = []
    for m in t.messages:
        if m.role == "system":
            continue
        if m.role == "tool":
            prev = contents[-1] if contents else None
            if prev is not None and prev.get("_results"):
                prev["parts"].append(_response_part(m))
            else:
                contents.append({"role": "user", "parts": [_response_part(m)], "_results": 1})
            continue
        parts: list[dict[str, Any]] = []
        if m.content is not None:
            parts.append({"text": m.content})
        for c in m.tool_calls:
            fc: dict[str, Any] = {"name": c.name, "args": c.arguments}
            if c.id is not None:
                fc["id"] = c.id
            fc.update({k: v for k, v in c.extra.items() if k not in fc})
            parts.append({"functionCall": fc})
        out: dict[str, Any] = {"role": "model" if m.role == "assistant" else "user", "parts": parts}
        _tail(m, out)
        contents.append(out)
    for content in contents:
        content.pop("_results", None)
    record: dict[str, Any] = {"id": t.conversation_id}
    if system:
        record["systemInstruction"] = {"parts": [{"text": m.content or ""} for m in system]}
    record["contents"] = contents
    if t.tools:
        decls: list[dict[str, Any]] = []
        others: list[dict[str, Any]] = []
        for tool in t.tools:
            raw = tool.get("x_gemini_tool")
            if isinstance(raw, dict):
                others.append(dict(raw))
            else:
                decls.append(dict(tool))
        record["tools"] = ([{"functionDeclarations": decls}] if decls else []) + others
    record.update(common)
    return record
