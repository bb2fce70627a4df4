"""The built-in formats' ``detect`` predicates (``--format auto``).

Each says whether a record has its format's shape, looking at as little of it as possible
(the hot path runs them per record). They are asked in the order given in
:mod:`rlstream.formats.builtin`, so a predicate may assume the earlier ones said no: the
``anthropic`` and ``openai`` ones, asked last, take what is left of the messages shapes.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from rlstream.errors import UnknownFormatError
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


def is_canonical(record: Mapping[str, Any]) -> bool:
    return (
        "schema_version" in record
        and "conversation_id" in record
        and isinstance(record.get("messages"), list)
    )


def is_otel(record: Mapping[str, Any]) -> bool:
    if "resourceSpans" in record or _has_gen_ai(record.get("attributes")):
        return True
    spans = record.get("spans")
    return isinstance(spans, list) and any(
        isinstance(s, Mapping) and _has_gen_ai(s.get("attributes")) for s in spans
    )


def is_langchain(record: Mapping[str, Any]) -> bool:
    """LangSmith runs (a run list, a run, ``inputs`` + outputs) or LangChain messages."""
    if isinstance(record.get("runs"), list) or "run_type" in record:
        return True
    if isinstance(record.get("inputs"), Mapping) and ("outputs" in record or "extra" in record):
        return True
    messages = record.get("messages")
    return isinstance(messages, list) and bool(messages) and _is_lc_message(messages[0])


def is_sharegpt(record: Mapping[str, Any]) -> bool:
    turns = record.get("conversations", record.get("conversation"))
    return isinstance(turns, list) and (
        not turns or (isinstance(turns[0], Mapping) and ("from" in turns[0] or "value" in turns[0]))
    )


def _is_responses(record: Mapping[str, Any]) -> bool:
    """An OpenAI Responses API object (``input`` + ``output`` / ``instructions``)."""
    return record.get("object") == "response" or (
        isinstance(record.get("input"), list | str)
        and ("output" in record or "instructions" in record)
    )


def is_anthropic(record: Mapping[str, Any]) -> bool:
    """Anthropic Messages (system prompt, content blocks, input_schema tools, a ``message``
    response) or an Anthropic request/response pair. Refuses a messages record that also
    carries OpenAI-only marks (either parser would drop part of it)."""
    messages = record.get("messages")
    if isinstance(messages, list):
        _refuse_mixed(record)
        if "system" in record or _anthropic_messages(messages):
            return True
        tools = record.get("tools")
        if (
            isinstance(tools, list)
            and tools
            and isinstance(tools[0], Mapping)
            and "input_schema" in tools[0]
        ):
            return True
        response = record.get("response")
        return isinstance(response, Mapping) and response.get("type") == "message"
    if _is_responses(record):
        return False
    return is_pair(record) and pair_kind(record) == "anthropic"


def is_openai(record: Mapping[str, Any]) -> bool:
    """What is left of the messages shapes (Chat Completions), a Responses API object, or
    an OpenAI request/response pair."""
    if isinstance(record.get("messages"), list) or _is_responses(record):
        return True
    return is_pair(record) and pair_kind(record) != "anthropic"
