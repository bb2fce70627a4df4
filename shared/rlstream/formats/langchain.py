"""LangChain / LangSmith run exports.

A record is one run (``run_type``, ``inputs.messages``, ``outputs.generations``) or a trace
export ``{"runs": [...]}``; then the last LLM run (the longest history) is the conversation
and the others are kept in ``metadata["other_runs"]``. Messages come serialised as
``{"lc": 1, "id": [..., "AIMessage"], "kwargs": {...}}``, as ``{"type": "ai", "data": {...}}``
(``messages_to_dict``), as OpenAI-style dicts, or as ``[role, text]`` pairs.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from pydantic import JsonValue

from rlstream.errors import SchemaViolation
from rlstream.formats import openai as oa
from rlstream.formats._build import build, link_tool_names, message_timestamp
from rlstream.formats._common import jsonable, loads_maybe, require_dict, tool_from_openai
from rlstream.transcript.model import Message, Role, ToolCall, Transcript

_CLASS_ROLE: dict[str, Role] = {
    "SystemMessage": "system",
    "HumanMessage": "user",
    "AIMessage": "assistant",
    "AIMessageChunk": "assistant",
    "ToolMessage": "tool",
    "FunctionMessage": "tool",
    "SystemMessageChunk": "system",
    "HumanMessageChunk": "user",
    "ToolMessageChunk": "tool",
}
_DEFAULT_CLASS = {
    "system": "SystemMessage",
    "user": "HumanMessage",
    "assistant": "AIMessage",
    "tool": "ToolMessage",
}
_TYPE_ROLE: dict[str, Role] = {
    "system": "system",
    "human": "user",
    "ai": "assistant",
    "tool": "tool",
    "function": "tool",
    "AIMessageChunk": "assistant",
}
_KW_KEYS = frozenset(
    {"content", "tool_calls", "tool_call_id", "name", "status", "content_is_null", "type"}
    | {"timestamp", "created_at", "time"}
)


def _lc_call(raw: Any) -> ToolCall:
    call = require_dict(raw, "tool call")
    if "function" in call:
        return oa.parse_call(call)
    name = call.get("name")
    if not isinstance(name, str):
        raise SchemaViolation("tool call without a name")
    args = call.get("args")
    cid = call.get("id")
    return ToolCall(
        id=None if cid is None else str(cid),
        name=name,
        arguments=jsonable(loads_maybe(args)),
        raw_arguments=args if isinstance(args, str) else None,
        extra={k: jsonable(v) for k, v in call.items() if k not in ("name", "args", "id", "type")},
    )


def _from_kwargs(role: Role, kw: Mapping[str, Any], cls: str | None) -> Message:
    extra: dict[str, JsonValue] = {k: jsonable(v) for k, v in kw.items() if k not in _KW_KEYS}
    if cls is not None and cls != _DEFAULT_CLASS[role]:
        extra["lc_class"] = cls
    if kw.get("type") not in (None, "human", "ai", "system", "tool"):
        extra["type"] = jsonable(kw["type"])
    content = oa.split_content(kw.get("content"), extra)
    if kw.get("content_is_null"):
        content = None
    calls = [_lc_call(c) for c in kw.get("tool_calls") or []]
    if not calls:
        additional = kw.get("additional_kwargs")
        if isinstance(additional, Mapping):
            raw_calls = additional.get("tool_calls") or []
            calls = [oa.parse_call(c) for c in raw_calls if isinstance(c, Mapping)]
            if additional.get("function_call"):
                calls.append(oa.parse_call(additional["function_call"]))
    tcid = kw.get("tool_call_id")
    name = kw.get("name")
    return Message(
        role=role,
        content=content,
        tool_calls=tuple(calls),
        tool_call_id=None if tcid is None else str(tcid),
        name=None if name is None else str(name),
        is_error=kw.get("status") == "error",
        timestamp=message_timestamp(kw, extra),
        extra=extra,
    )


def parse_message(raw: Any) -> Message:
    if isinstance(raw, list | tuple) and len(raw) == 2 and all(isinstance(x, str) for x in raw):
        role = _TYPE_ROLE.get(raw[0]) or oa._ROLES.get(raw[0])
        if role is None:
            raise SchemaViolation(f"unknown message role {raw[0]!r}")
        return Message(role=role, content=raw[1])
    msg = require_dict(raw, "message")
    if "kwargs" in msg and isinstance(msg.get("id"), list):
        cls = str(msg["id"][-1]) if msg["id"] else ""
        role = _CLASS_ROLE.get(cls)
        if role is None and cls == "ChatMessage":
            role = oa._ROLES.get(str(msg["kwargs"].get("role", "")))
        if role is None:
            raise SchemaViolation(f"unknown LangChain message class {cls!r}")
        return _from_kwargs(role, require_dict(msg["kwargs"], "kwargs"), cls)
    if "data" in msg and isinstance(msg.get("type"), str):
        role = _TYPE_ROLE.get(msg["type"])
        if role is None:
            raise SchemaViolation(f"unknown LangChain message type {msg['type']!r}")
        return _from_kwargs(role, require_dict(msg["data"], "data"), None)
    if "type" in msg and "role" not in msg and msg["type"] in _TYPE_ROLE:
        return _from_kwargs(_TYPE_ROLE[msg["type"]], msg, None)
    return oa.parse_message(msg)


def _input_messages(inputs: Any) -> list[Any]:
    if not isinstance(inputs, Mapping):
        return []
    msgs = inputs.get("messages", inputs.get("input"))
    if (
        isinstance(msgs, list)
        and msgs
        and isinstance(msgs[0], list)
        and not isinstance(msgs[0][0], str)
    ):
        msgs = msgs[0]  # batched chat-model input: [[...]]
    if isinstance(msgs, list):
        return msgs
    prompts = inputs.get("prompts")
    if isinstance(prompts, list) and prompts:
        return [["human", str(prompts[0])]]
    return []


def _output_messages(outputs: Any) -> list[Any]:
    if not isinstance(outputs, Mapping):
        return []
    gens = outputs.get("generations")
    if isinstance(gens, list) and gens:
        first = gens[0][0] if isinstance(gens[0], list) and gens[0] else gens[0]
        if isinstance(first, Mapping):
            if "message" in first:
                return [first["message"]]
            if "text" in first:
                return [["ai", str(first["text"])]]
    for key in ("output", "messages"):
        value = outputs.get(key)
        if isinstance(value, list):
            return value
        if isinstance(value, Mapping):
            return [value]
    return []


def _pick_run(runs: list[Any]) -> tuple[Mapping[str, Any], list[Any]]:
    best: Mapping[str, Any] | None = None
    best_len = -1
    for run in runs:
        if not isinstance(run, Mapping):
            continue
        n = len(_input_messages(run.get("inputs"))) + len(_output_messages(run.get("outputs")))
        if n >= best_len and n > 0:
            best, best_len = run, n
    if best is None:
        raise SchemaViolation("trace export has no run with messages")
    return best, [r for r in runs if r is not best]


def parse_langchain(record: Mapping[str, Any]) -> Transcript:
    others: list[Any] = []
    run: Mapping[str, Any] = record
    if isinstance(record.get("runs"), list):
        run, others = _pick_run(record["runs"])
    raw_msgs = _input_messages(run.get("inputs")) + _output_messages(run.get("outputs"))
    if not raw_msgs:
        raise SchemaViolation("run has no inputs.messages / outputs")
    messages = link_tool_names([parse_message(m) for m in raw_msgs])
    extra_raw = run.get("extra")
    extra: Mapping[str, Any] = extra_raw if isinstance(extra_raw, Mapping) else {}
    meta: dict[str, Any] = {}
    run_meta = extra.get("metadata")
    if isinstance(run_meta, Mapping):
        meta.update(run_meta)
    invocation = extra.get("invocation_params") or {}
    rest_extra = {k: v for k, v in extra.items() if k not in ("metadata", "invocation_params")}
    if rest_extra:
        meta["run_extra"] = rest_extra
    inv_rest = {k: v for k, v in invocation.items() if k not in ("model", "model_name", "tools")}
    if inv_rest:
        meta["invocation_params"] = inv_rest
    model = invocation.get("model") or invocation.get("model_name") or run.get("model")
    tools = [tool_from_openai(t) for t in invocation.get("tools") or []]
    for key in (
        "trace_id",
        "parent_run_id",
        "session_id",
        "name",
        "run_type",
        "tags",
        "status",
        "error",
    ):
        if run.get(key) is not None and key not in meta:
            meta["run_name" if key == "name" else key] = run[key]
    if run is not record:
        meta["run_id"] = run.get("id")
        meta["other_runs"] = others
    inputs_rest = {
        k: v
        for k, v in (run.get("inputs") or {}).items()
        if k not in ("messages", "input", "prompts")
    }
    if inputs_rest:
        meta["inputs"] = inputs_rest
    outcome: dict[str, Any] = {}
    feedback = run.get("feedback", record.get("feedback"))
    if isinstance(feedback, list):
        outcome["feedback"] = feedback
        for fb in feedback:
            if isinstance(fb, Mapping) and isinstance(fb.get("key"), str):
                outcome.setdefault(fb["key"], fb.get("score", fb.get("value")))
    elif feedback is not None:
        outcome["feedback"] = feedback
    if run.get("feedback_stats") is not None:
        outcome["feedback_stats"] = run["feedback_stats"]
    if run is record:
        consumed = {
            "inputs",
            "outputs",
            "extra",
            "feedback",
            "feedback_stats",
            "start_time",
            "end_time",
        }
        consumed |= {
            "trace_id",
            "parent_run_id",
            "session_id",
            "name",
            "run_type",
            "tags",
            "status",
            "error",
        }
        consumed.add("id")
        cid = run.get("id")
    else:
        consumed = {"runs", "feedback"}
        if record.get("id"):
            consumed.add("id")
        cid = record.get("id") or run.get("trace_id") or run.get("id")
    return build(
        record,
        fmt="langchain",
        messages=messages,
        consumed=consumed,
        tools=tools,
        conversation_id=None if cid is None else str(cid),
        model=None if model is None else str(model),
        started_at=run.get("start_time") or record.get("started_at"),
        ended_at=run.get("end_time") or record.get("ended_at"),
        metadata=meta,
        outcome=outcome,
    )
