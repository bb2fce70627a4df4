"""Canonical Transcript -> each built-in raw log shape (the ``emit`` of each Format).

The inverse of the parsers: ``parse(to_format(t, fmt))`` gives back the same messages, tool
calls (ids, names, arguments), tool-result linkage and conversation id. Used by the
sample-data generator and by round-trip tests. Fields a format has no slot for travel in
keys the matching parser reads back (``metadata``, ``outcome``, ``label`` ...).
"""

from __future__ import annotations

from typing import Any

import orjson

from rlstream.formats._common import (
    dumps,
    tool_to_anthropic,
    tool_to_openai,
    ts_out,
)
from rlstream.transcript.model import Message, ToolCall, Transcript

__all__ = [
    "emit_anthropic",
    "emit_canonical",
    "emit_gemini",
    "emit_langchain",
    "emit_openai",
    "emit_otel",
    "emit_sharegpt",
]


def _common(t: Transcript) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for key in ("model", "agent", "agent_version", "policy_version"):
        value = getattr(t, key)
        if value is not None:
            out[key] = value
    if t.started_at is not None:
        out["started_at"] = ts_out(t.started_at)
    if t.ended_at is not None:
        out["ended_at"] = ts_out(t.ended_at)
    if t.outcome:
        out["outcome"] = dict(t.outcome)
    if t.label is not None:
        out["label"] = t.label
    if t.metadata:
        out["metadata"] = dict(t.metadata)
    return out


def _msg_tail(m: Message, out: dict[str, Any], skip: frozenset[str] = frozenset()) -> None:
    if m.is_error:
        out["is_error"] = True
    if m.timestamp is not None:
        out["timestamp"] = ts_out(m.timestamp)
    for k, v in m.extra.items():
        if k not in skip and k not in out:
            out[k] = v


def _raw_args(c: ToolCall) -> str:
    """The source's argument string when it still matches the parsed value, else JSON."""
    if c.raw_arguments is not None:
        try:
            if orjson.loads(c.raw_arguments) == c.arguments:
                return c.raw_arguments
        except orjson.JSONDecodeError:
            if c.arguments is None or c.arguments == c.raw_arguments:
                return c.raw_arguments
    return dumps(c.arguments)


# --- OpenAI chat ---------------------------------------------------------------------------


def _openai_call(c: ToolCall) -> dict[str, Any]:
    out: dict[str, Any] = {"type": c.type, "function": {"name": c.name, "arguments": _raw_args(c)}}
    if c.id is not None:
        out["id"] = c.id
    out.update({k: v for k, v in c.extra.items() if k not in out})
    return out


def _openai_msg(m: Message) -> dict[str, Any]:
    role = m.extra.get("original_role", m.role)
    content: Any = m.extra.get("content_parts", m.content)
    out: dict[str, Any] = {"role": role, "content": content}
    calls = list(m.tool_calls)
    if calls and calls[-1].extra.get("legacy") == "function_call":
        legacy = calls.pop()
        out["function_call"] = {"name": legacy.name, "arguments": _raw_args(legacy)}
        out["function_call"].update({k: v for k, v in legacy.extra.items() if k != "legacy"})
    if calls:
        out["tool_calls"] = [_openai_call(c) for c in calls]
    if m.tool_call_id is not None:
        out["tool_call_id"] = m.tool_call_id
    if m.name is not None:
        out["name"] = m.name
    _msg_tail(m, out, frozenset({"original_role", "content_parts"}))
    return out


def emit_openai(t: Transcript) -> dict[str, Any]:
    out: dict[str, Any] = {
        "id": t.conversation_id,
        "messages": [_openai_msg(m) for m in t.messages],
    }
    if t.tools:
        out["tools"] = [tool_to_openai(tool) for tool in t.tools]
    out.update(_common(t))
    return out


# --- Anthropic Messages --------------------------------------------------------------------


def _anthropic_assistant(m: Message) -> dict[str, Any]:
    blocks = m.extra.get("content_blocks")
    content: Any
    if isinstance(blocks, list):
        content = blocks
    elif not m.tool_calls:
        content = m.content if m.content is not None else ""
    else:
        content = [] if m.content is None else [{"type": "text", "text": m.content}]
        for c in m.tool_calls:
            block: dict[str, Any] = {"type": "tool_use", "name": c.name, "input": c.arguments}
            if c.id is not None:
                block["id"] = c.id
            block.update({k: v for k, v in c.extra.items() if k not in block})
            content.append(block)
    out: dict[str, Any] = {"role": m.role, "content": content}
    if m.name is not None:
        out["name"] = m.name
    _msg_tail(m, out, frozenset({"content_blocks"}))
    return out


def _anthropic_result(m: Message) -> dict[str, Any]:
    content = m.extra.get("content_blocks", m.extra.get("content_raw", m.content))
    block: dict[str, Any] = {"type": "tool_result", "content": content}
    if m.tool_call_id is not None:
        block["tool_use_id"] = m.tool_call_id
    if m.is_error:
        block["is_error"] = True
    if m.timestamp is not None:
        block["timestamp"] = ts_out(m.timestamp)
    if m.name is not None:
        block["name"] = m.name
    skip = ("content_blocks", "content_raw")
    block.update({k: v for k, v in m.extra.items() if k not in block and k not in skip})
    return block


def emit_anthropic(t: Transcript) -> dict[str, Any]:
    system = [m for m in t.messages if m.role == "system"]
    messages: list[dict[str, Any]] = []
    for m in t.messages:
        if m.role == "system":
            continue
        if m.role == "tool":
            prev = messages[-1] if messages else None
            if prev is not None and prev.get("_results"):
                prev["content"].append(_anthropic_result(m))
            else:
                messages.append({"role": "user", "content": [_anthropic_result(m)], "_results": 1})
        else:
            messages.append(_anthropic_assistant(m))
    for msg in messages:
        msg.pop("_results", None)
    out: dict[str, Any] = {"id": t.conversation_id}
    if len(system) == 1 and not system[0].extra and system[0].timestamp is None:
        out["system"] = system[0].content or ""
    elif system:
        blocks: list[dict[str, Any]] = []
        for m in system:
            b: dict[str, Any] = {"type": "text", "text": m.content or ""}
            _msg_tail(m, b)
            blocks.append(b)
        out["system"] = blocks
    out["messages"] = messages
    if t.tools:
        out["tools"] = [tool_to_anthropic(tool) for tool in t.tools]
    out.update(_common(t))
    return out


# --- ShareGPT ------------------------------------------------------------------------------

_SHAREGPT_FROM = {"system": "system", "user": "human", "assistant": "gpt", "tool": "observation"}


def emit_sharegpt(t: Transcript) -> dict[str, Any]:
    turns: list[dict[str, Any]] = []
    for m in t.messages:
        if m.role == "assistant" and m.tool_calls:
            if m.content is not None:
                turn: dict[str, Any] = {"from": m.extra.get("from", "gpt"), "value": m.content}
                _msg_tail(m, turn, frozenset({"from"}))
                turns.append(turn)
            for c in m.tool_calls:
                call: dict[str, Any] = {"name": c.name, "arguments": c.arguments}
                if c.id is not None:
                    call["id"] = c.id
                call.update({k: v for k, v in c.extra.items() if k not in call})
                turn = {"from": "function_call", "value": dumps(call)}
                if m.content is None and c is m.tool_calls[0]:
                    _msg_tail(m, turn, frozenset({"from"}))  # no gpt turn carries them
                turns.append(turn)
            continue
        turn = {"from": m.extra.get("from", _SHAREGPT_FROM[m.role]), "value": m.content or ""}
        if m.tool_call_id is not None:
            turn["tool_call_id"] = m.tool_call_id
        if m.name is not None:
            turn["name"] = m.name
        _msg_tail(m, turn, frozenset({"from"}))
        turns.append(turn)
    out: dict[str, Any] = {"id": t.conversation_id, "conversations": turns}
    if t.tools:
        out["tools"] = dumps(list(t.tools))
    out.update(_common(t))
    return out


# --- LangChain / LangSmith run -------------------------------------------------------------

_LC_CLASS = {
    "system": "SystemMessage",
    "user": "HumanMessage",
    "assistant": "AIMessage",
    "tool": "ToolMessage",
}


def _lc_msg(m: Message) -> dict[str, Any]:
    kwargs: dict[str, Any] = {"content": m.extra.get("content_parts", m.content or "")}
    if m.tool_calls:
        kwargs["tool_calls"] = [
            {"name": c.name, "args": c.arguments, "id": c.id, "type": "tool_call", **c.extra}
            for c in m.tool_calls
        ]
    if m.tool_call_id is not None:
        kwargs["tool_call_id"] = m.tool_call_id
    if m.name is not None:
        kwargs["name"] = m.name
    if m.is_error:
        kwargs["status"] = "error"
    if m.content is None and "content_parts" not in m.extra:
        kwargs["content_is_null"] = True
    if m.timestamp is not None:
        kwargs["timestamp"] = ts_out(m.timestamp)
    for k, v in m.extra.items():
        if k != "content_parts" and k not in kwargs:
            kwargs[k] = v
    cls = m.extra.get("lc_class", _LC_CLASS[m.role])
    kwargs.pop("lc_class", None)
    return {
        "lc": 1,
        "type": "constructor",
        "id": ["langchain", "schema", "messages", cls],
        "kwargs": kwargs,
    }


def emit_langchain(t: Transcript) -> dict[str, Any]:
    msgs = list(t.messages)
    final = msgs.pop() if msgs and msgs[-1].role == "assistant" else None
    meta = dict(t.metadata)
    run: dict[str, Any] = {"id": t.conversation_id}
    for key, src in (
        ("trace_id", "trace_id"),
        ("name", "run_name"),
        ("parent_run_id", "parent_run_id"),
    ):
        if src in meta:
            run[key] = meta.pop(src)
    run.update(
        {
            "run_type": "llm",
            "inputs": {"messages": [[_lc_msg(m) for m in msgs]]},
            "outputs": None,
        }
    )
    if final is not None:
        run["outputs"] = {
            "generations": [
                [{"text": final.content or "", "type": "ChatGeneration", "message": _lc_msg(final)}]
            ]
        }
    invocation: dict[str, Any] = {}
    if t.model is not None:
        invocation["model"] = t.model
    if t.tools:
        invocation["tools"] = [tool_to_openai(tool) for tool in t.tools]
    run["extra"] = {"metadata": meta, "invocation_params": invocation}
    if t.started_at is not None:
        run["start_time"] = ts_out(t.started_at)
    if t.ended_at is not None:
        run["end_time"] = ts_out(t.ended_at)
    common = _common(t)
    for key in ("model", "metadata", "started_at", "ended_at"):
        common.pop(key, None)
    outcome = dict(common.pop("outcome", {}))
    if "feedback" in outcome:
        run["feedback"] = outcome.pop("feedback")
    if outcome:
        run["outcome"] = outcome
    run.update(common)
    return run


# --- OpenTelemetry GenAI span --------------------------------------------------------------


def _otel_msg(m: Message) -> dict[str, Any]:
    parts: list[dict[str, Any]] = []
    if m.role == "tool":
        part: dict[str, Any] = {"type": "tool_call_response", "response": m.content}
        if m.tool_call_id is not None:
            part["id"] = m.tool_call_id
        parts.append(part)
    else:
        if m.content is not None:
            parts.append({"type": "text", "content": m.content})
        for c in m.tool_calls:
            call: dict[str, Any] = {"type": "tool_call", "name": c.name, "arguments": c.arguments}
            if c.id is not None:
                call["id"] = c.id
            call.update({k: v for k, v in c.extra.items() if k not in call})
            parts.append(call)
    out: dict[str, Any] = {"role": m.role, "parts": parts}
    if m.name is not None:
        out["name"] = m.name
    _msg_tail(m, out)
    return out


def emit_otel(t: Transcript) -> dict[str, Any]:
    msgs = list(t.messages)
    final = msgs.pop() if msgs and msgs[-1].role == "assistant" else None
    meta = dict(t.metadata)
    extra_attrs = meta.pop("attributes", None)
    attrs: dict[str, Any] = {"gen_ai.operation.name": "chat"}
    if isinstance(extra_attrs, dict):
        attrs.update(extra_attrs)
    attrs |= {
        "gen_ai.conversation.id": t.conversation_id,
        "gen_ai.input.messages": dumps([_otel_msg(m) for m in msgs]),
    }
    if final is not None:
        attrs["gen_ai.output.messages"] = dumps([_otel_msg(final)])
    if t.model is not None:
        attrs["gen_ai.request.model"] = t.model
    if t.tools:
        attrs["gen_ai.tool.definitions"] = dumps(list(t.tools))
    span: dict[str, Any] = {
        "trace_id": meta.pop("trace_id", None) or _hex_id(t.conversation_id, 16),
        "span_id": meta.pop("span_id", None) or _hex_id(t.conversation_id, 8),
        "name": meta.pop("span_name", None) or (f"chat {t.model}" if t.model else "chat"),
        "attributes": attrs,
    }
    if t.started_at is not None:
        span["start_time"] = ts_out(t.started_at)
    if t.ended_at is not None:
        span["end_time"] = ts_out(t.ended_at)
    common = _common(t)
    for key in ("model", "started_at", "ended_at"):
        common.pop(key, None)
    if meta:
        common["metadata"] = meta
    else:
        common.pop("metadata", None)
    span.update(common)
    return span


def _hex_id(seed: str, nbytes: int) -> str:
    import hashlib

    return hashlib.blake2b(seed.encode(), digest_size=nbytes).hexdigest()


def emit_gemini(t: Transcript) -> dict[str, Any]:
    from rlstream.formats.gemini import to_gemini

    return to_gemini(t, _common(t))


def emit_canonical(t: Transcript) -> dict[str, Any]:
    return t.model_dump(mode="json")
