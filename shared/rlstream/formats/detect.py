"""Recognise a record's format from its shape (``--format auto``).

Checks are ordered from the most to the least specific shape and stop at the first match,
looking at as little of the record as possible (the hot path runs this per record).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from rlstream.errors import UnknownFormatError
from rlstream.formats.gemini import is_gemini_record
from rlstream.formats.pairs import is_pair, pair_kind, request_signals

_ANTHROPIC_BLOCKS = frozenset(
    {"tool_use", "tool_result", "thinking", "redacted_thinking", "image", "document"}
)


_GENAI_PREFIXES = ("gen_ai.", "llm.input_messages.", "llm.output_messages.")


def _has_gen_ai(attrs: Any) -> bool:
    """GenAI semantic-convention (or OpenInference) message attributes present."""
    if isinstance(attrs, Mapping):
        return any(k.startswith(_GENAI_PREFIXES) for k in attrs)
    if isinstance(attrs, list):
        return any(
            isinstance(a, Mapping) and str(a.get("key", "")).startswith(_GENAI_PREFIXES)
            for a in attrs
        )
    return False


def _is_lc_message(m: Any) -> bool:
    if isinstance(m, list) and m and isinstance(m[0], Mapping):
        m = m[0]
    return isinstance(m, Mapping) and ("lc" in m or "kwargs" in m or ("data" in m and "type" in m))


def _anthropic_messages(messages: list[Any]) -> bool:
    for m in messages:
        if not isinstance(m, Mapping):
            continue
        content = m.get("content")
        if isinstance(content, list):
            for block in content:
                if isinstance(block, Mapping) and block.get("type") in _ANTHROPIC_BLOCKS:
                    return block.get("type") != "image" or "source" in block
    return False


def _refuse_mixed(record: Mapping[str, Any]) -> None:
    """A messages record with both Anthropic-only and OpenAI-only marks: either parser would
    drop part of it (a top-level system prompt, tool_use blocks, or tool_calls / choices)."""
    signals = request_signals(record) - {"openai_responses"}
    if isinstance(record.get("choices"), list):
        signals.add("openai")
    response = record.get("response")
    if isinstance(response, Mapping) and response.get("type") == "message":
        signals.add("anthropic")
    if len(signals) > 1:
        raise UnknownFormatError(
            "ambiguous record: it has both Anthropic (system / tool_use blocks / "
            "input_schema) and OpenAI (tool_calls / role tool / choices) marks; "
            "pass --format to say which"
        )


def detect_format(record: Any) -> str:
    """Name of the format ``record`` is in; raises UnknownFormatError when nothing fits."""
    if not isinstance(record, Mapping):
        raise UnknownFormatError(f"a record must be a JSON object, got {type(record).__name__}")
    messages = record.get("messages")
    if "schema_version" in record and "conversation_id" in record and isinstance(messages, list):
        return "canonical"
    if "resourceSpans" in record or _has_gen_ai(record.get("attributes")):
        return "otel"
    spans = record.get("spans")
    if isinstance(spans, list) and any(
        isinstance(s, Mapping) and _has_gen_ai(s.get("attributes")) for s in spans
    ):
        return "otel"
    if isinstance(record.get("runs"), list) or "run_type" in record:
        return "langchain"
    if isinstance(record.get("inputs"), Mapping) and ("outputs" in record or "extra" in record):
        return "langchain"
    if is_gemini_record(record):
        return "gemini"
    turns = record.get("conversations", record.get("conversation"))
    if isinstance(turns, list) and (
        not turns or (isinstance(turns[0], Mapping) and ("from" in turns[0] or "value" in turns[0]))
    ):
        return "sharegpt"
    if isinstance(messages, list):
        if messages and _is_lc_message(messages[0]):
            return "langchain"
        _refuse_mixed(record)
        if "system" in record or _anthropic_messages(messages):
            return "anthropic"
        tools = record.get("tools")
        if (
            isinstance(tools, list)
            and tools
            and isinstance(tools[0], Mapping)
            and "input_schema" in tools[0]
        ):
            return "anthropic"
        response = record.get("response")
        if isinstance(response, Mapping) and response.get("type") == "message":
            return "anthropic"
        return "openai"
    if record.get("object") == "response" or (
        isinstance(record.get("input"), list | str)
        and ("output" in record or "instructions" in record)
    ):
        return "openai"  # Responses API
    if is_pair(record):
        return "anthropic" if pair_kind(record) == "anthropic" else "openai"
    raise UnknownFormatError(
        "record matches no supported format (openai, anthropic, gemini, sharegpt, langchain, otel, "
        f"canonical); top-level keys: {sorted(record)[:12]}"
    )
