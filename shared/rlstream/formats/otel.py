"""OpenTelemetry GenAI spans (semantic conventions for generative AI).

Reads both generations of the conventions: the JSON ``gen_ai.input.messages`` /
``gen_ai.output.messages`` / ``gen_ai.system_instructions`` attributes and the older indexed
``gen_ai.prompt.{i}.*`` / ``gen_ai.completion.{i}.*`` attributes, plus per-message span events
(``gen_ai.user.message``, ``gen_ai.choice`` ...). Attributes may be a plain dict or OTLP's
``[{"key", "value": {"stringValue": ...}}]`` list. A record may be one span, ``{"spans": [...]}``
or an OTLP ``resourceSpans`` export; then the GenAI span with the longest history is the
conversation and the other spans are kept in ``metadata["other_spans"]``.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

from pydantic import JsonValue

from rlstream.errors import SchemaViolation
from rlstream.formats import openai as oa
from rlstream.formats._build import build, link_tool_names
from rlstream.formats._common import as_text, jsonable, loads_maybe, tool_from_openai
from rlstream.transcript.model import Message, ToolCall, Transcript

_INDEXED = re.compile(
    r"^(?:gen_ai\.(prompt|completion)\.(\d+)\.|llm\.(input|output)_messages\.(\d+)\.message\.)(.+)$"
)
_CALL_FIELD = re.compile(r"^tool_calls\.(\d+)\.(?:tool_call\.)?(?:function\.)?(.+)$")
_OTLP_VALUE_KEYS = ("stringValue", "intValue", "doubleValue", "boolValue", "bytesValue")
_MSG_ATTRS = frozenset(
    {
        "gen_ai.input.messages",
        "gen_ai.output.messages",
        "gen_ai.system_instructions",
        "gen_ai.request.model",
        "gen_ai.conversation.id",
        "gen_ai.tool.definitions",
    }
)
_EVENT_ROLE = {
    "gen_ai.system.message": "system",
    "gen_ai.user.message": "user",
    "gen_ai.assistant.message": "assistant",
    "gen_ai.tool.message": "tool",
    "gen_ai.choice": "assistant",
}


def _otlp_value(v: Any) -> Any:
    if not isinstance(v, Mapping):
        return v
    for key in _OTLP_VALUE_KEYS:
        if key in v:
            return int(v[key]) if key == "intValue" else v[key]
    if "arrayValue" in v:
        return [_otlp_value(x) for x in (v["arrayValue"] or {}).get("values", [])]
    if "kvlistValue" in v:
        return attributes((v["kvlistValue"] or {}).get("values", []))
    return v


def attributes(raw: Any) -> dict[str, Any]:
    """Span attributes as a flat dict, whichever encoding the exporter used."""
    if isinstance(raw, Mapping):
        return dict(raw)
    if isinstance(raw, list):
        return {
            str(a.get("key")): _otlp_value(a.get("value")) for a in raw if isinstance(a, Mapping)
        }
    return {}


def _parts_message(raw: Any) -> list[Message]:
    """One semconv JSON message (``role`` + ``parts``) -> canonical messages."""
    if not isinstance(raw, Mapping):
        raise SchemaViolation("gen_ai message must be an object")
    if "parts" not in raw:
        return [oa.parse_message(raw)]
    role = raw.get("role")
    if role not in ("system", "user", "assistant", "tool"):
        raise SchemaViolation(f"unknown gen_ai message role {role!r}")
    extra: dict[str, JsonValue] = {
        k: jsonable(v)
        for k, v in raw.items()
        if k not in ("role", "parts", "name", "is_error", "timestamp")
    }
    texts: list[str] = []
    calls: list[ToolCall] = []
    results: list[Message] = []
    odd: list[Any] = []
    for part in raw.get("parts") or []:
        kind = part.get("type") if isinstance(part, Mapping) else None
        if kind == "text":
            texts.append(str(part.get("content", "")))
        elif kind == "tool_call":
            cid = part.get("id")
            args = part.get("arguments")
            calls.append(
                ToolCall(
                    id=None if cid is None else str(cid),
                    name=str(part.get("name")),
                    arguments=jsonable(loads_maybe(args)),
                    raw_arguments=args if isinstance(args, str) else None,
                    extra={
                        k: jsonable(v)
                        for k, v in part.items()
                        if k not in ("type", "id", "name", "arguments")
                    },
                )
            )
        elif kind == "tool_call_response":
            rid = part.get("id")
            resp = part.get("response")
            rextra = {
                k: jsonable(v) for k, v in part.items() if k not in ("type", "id", "response")
            }
            if resp is not None and not isinstance(resp, str):
                rextra["content_raw"] = jsonable(resp)
            results.append(
                Message(
                    role="tool",
                    content=as_text(resp),
                    tool_call_id=None if rid is None else str(rid),
                    name=None if raw.get("name") is None else str(raw["name"]),
                    is_error=bool(raw.get("is_error", False)),
                    extra=rextra,
                )
            )
        else:
            odd.append(part)
    if odd:
        extra["other_parts"] = jsonable(odd)
    from rlstream.formats._common import parse_ts

    ts = parse_ts(raw.get("timestamp"))
    if role == "tool" or (results and not texts and not calls):
        return [r.model_copy(update={"timestamp": ts}) if ts else r for r in results]
    own = Message(
        role=role,
        content="\n".join(texts) if texts else None,
        tool_calls=tuple(calls),
        name=None if raw.get("name") is None else str(raw["name"]),
        is_error=bool(raw.get("is_error", False)),
        timestamp=ts,
        extra=extra,
    )
    return [*results, own]


def _json_messages(value: Any, what: str) -> list[Message]:
    decoded = loads_maybe(value)
    if not isinstance(decoded, list):
        raise SchemaViolation(f"{what} must be a JSON list")
    return [m for raw in decoded for m in _parts_message(raw)]


def _indexed(attrs: Mapping[str, Any], used: set[str]) -> list[Message]:
    """Indexed message attributes: legacy GenAI ``gen_ai.prompt.{i}.*`` /
    ``gen_ai.completion.{i}.*`` and OpenInference ``llm.input_messages.{i}.message.*`` /
    ``llm.output_messages.{i}.message.*`` (Phoenix / Arize instrumentations)."""
    slots: dict[tuple[int, int], dict[str, Any]] = {}
    for key, value in attrs.items():
        m = _INDEXED.match(key)
        if m is None:
            continue
        used.add(key)
        kind = m.group(1) or m.group(3)
        idx, field = int(m.group(2) or m.group(4)), m.group(5)
        slot = slots.setdefault((0 if kind in ("prompt", "input") else 1, idx), {})
        cm = _CALL_FIELD.match(field)
        if cm is not None:
            call = slot.setdefault("tool_calls", {}).setdefault(int(cm.group(1)), {})
            call[cm.group(2)] = value
        else:
            slot[field] = value
    out = []
    for (kind, _), slot in sorted(slots.items()):
        calls = slot.pop("tool_calls", {})
        if calls:
            slot["tool_calls"] = [
                {
                    "id": c.get("id"),
                    "type": "function",
                    "function": {"name": c.get("name"), "arguments": c.get("arguments")},
                }
                | {k: v for k, v in c.items() if k not in ("id", "name", "arguments")}
                for _, c in sorted(calls.items())
            ]
        slot.setdefault("role", "user" if kind == 0 else "assistant")
        out.append(oa.parse_message(slot))
    return out


def _events(events: Any) -> tuple[list[Message], list[Any]]:
    msgs: list[Message] = []
    rest: list[Any] = []
    for ev in events or []:
        role = _EVENT_ROLE.get(ev.get("name", "")) if isinstance(ev, Mapping) else None
        if role is None:
            rest.append(ev)
            continue
        body = attributes(ev.get("attributes"))
        if isinstance(ev.get("body"), Mapping):
            body.update(ev["body"])
        if isinstance(body.get("message"), Mapping):
            body = {**body, **body.pop("message")}
        body = {k: v for k, v in body.items() if k != "gen_ai.system"}
        body.setdefault("role", role)
        if "id" in body and role == "tool":
            body["tool_call_id"] = body.pop("id")
        if "time_unix_nano" in ev or "timeUnixNano" in ev:
            body["timestamp"] = ev.get("time_unix_nano", ev.get("timeUnixNano"))
        msgs.append(oa.parse_message(body))
    return msgs, rest


def _span_messages(span: Mapping[str, Any]) -> tuple[list[Message], dict[str, Any], set[str]]:
    attrs = attributes(span.get("attributes"))
    used: set[str] = set()
    messages: list[Message] = []
    sys_instr = attrs.get("gen_ai.system_instructions")
    if sys_instr is not None:
        decoded = loads_maybe(sys_instr)
        parts = decoded if isinstance(decoded, list) else [decoded]
        for p in parts:
            text = p.get("content") if isinstance(p, Mapping) else p
            messages.append(Message(role="system", content=as_text(text)))
    if "gen_ai.input.messages" in attrs:
        messages += _json_messages(attrs["gen_ai.input.messages"], "gen_ai.input.messages")
    messages += _indexed(attrs, used)
    if "gen_ai.output.messages" in attrs:
        outs = loads_maybe(attrs["gen_ai.output.messages"])
        if isinstance(outs, list) and outs:
            messages += _parts_message(outs[0])
            if len(outs) > 1:
                attrs["gen_ai.output.other_choices"] = outs[1:]
    used |= _MSG_ATTRS
    return messages, attrs, used


def _all_spans(record: Mapping[str, Any]) -> list[Any] | None:
    if isinstance(record.get("spans"), list):
        return list(record["spans"])
    if isinstance(record.get("resourceSpans"), list):
        spans: list[Any] = []
        for rs in record["resourceSpans"]:
            for ss in (rs or {}).get("scopeSpans", []) or []:
                spans.extend((ss or {}).get("spans", []) or [])
        return spans
    return None


def parse_otel(record: Mapping[str, Any]) -> Transcript:
    spans = _all_spans(record)
    span: Mapping[str, Any] = record
    meta: dict[str, Any] = {}
    if spans is not None:
        scored = [
            (len(_span_messages(s)[0]) + len(_events(s.get("events"))[0]), i)
            for i, s in enumerate(spans)
            if isinstance(s, Mapping)
        ]
        if not scored or max(scored)[0] == 0:
            raise SchemaViolation("no span with gen_ai messages")
        best = max(scored)[1]
        span = spans[best]
        meta["other_spans"] = spans[:best] + spans[best + 1 :]
    messages, attrs, used = _span_messages(span)
    ev_msgs, other_events = _events(span.get("events"))
    messages += ev_msgs
    if not messages:
        raise SchemaViolation("span carries no gen_ai messages")
    ctx_raw = span.get("context")
    ctx: Mapping[str, Any] = ctx_raw if isinstance(ctx_raw, Mapping) else {}
    trace_id = span.get("trace_id", span.get("traceId", ctx.get("trace_id")))
    span_id = span.get("span_id", span.get("spanId", ctx.get("span_id")))
    if trace_id is not None:
        meta["trace_id"] = trace_id
    if span_id is not None:
        meta["span_id"] = span_id
    if span.get("name") is not None:
        meta["span_name"] = span["name"]
    rest_attrs = {k: v for k, v in attrs.items() if k not in used}
    if rest_attrs:
        meta["attributes"] = rest_attrs
    if other_events:
        meta["events"] = other_events
    if span is not record:
        meta["span"] = {k: v for k, v in span.items() if k not in _SPAN_KEYS}
    tools_raw = loads_maybe(attrs.get("gen_ai.tool.definitions")) or []
    tools = [
        tool_from_openai(t) for t in (tools_raw if isinstance(tools_raw, list) else [tools_raw])
    ]
    conv = attrs.get("gen_ai.conversation.id") or attrs.get("session.id") or span_id or trace_id
    model = attrs.get("gen_ai.request.model") or attrs.get("llm.model_name")
    consumed = _SPAN_KEYS | {"spans", "resourceSpans"}
    return build(
        record,
        fmt="otel",
        messages=link_tool_names(messages),
        consumed=consumed,
        tools=tools,
        conversation_id=None if conv is None else str(conv),
        model=None if model is None else str(model),
        started_at=span.get("start_time", span.get("startTimeUnixNano")),
        ended_at=span.get("end_time", span.get("endTimeUnixNano")),
        metadata=meta,
    )


_SPAN_KEYS = frozenset(
    {
        "trace_id",
        "traceId",
        "span_id",
        "spanId",
        "name",
        "attributes",
        "events",
        "start_time",
        "startTimeUnixNano",
        "end_time",
        "endTimeUnixNano",
    }
)
