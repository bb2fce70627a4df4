"""Logged request/response pairs: ``{"request": {...}, "response": {...}}``.

The common way to log an SDK call. Three shapes are read: Anthropic Messages (request with
``messages`` [+ ``system``, ``tools``], response ``{"type": "message", "content": [...]}``),
OpenAI Chat Completions (request ``messages``, response ``choices``) and OpenAI Responses
(request ``input`` [+ ``instructions``], response ``{"object": "response", "output": [...]}``).
A response may be wrapped in ``{"body": ...}`` (batch output, proxies).

Which one a pair is comes from both halves; when they disagree, or neither says, the record
is refused with the reason rather than read by a parser that would drop half of it.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from rlstream.errors import SchemaViolation, UnknownFormatError

_ANTHROPIC_BLOCKS = frozenset({"tool_use", "tool_result", "thinking", "redacted_thinking"})


def response_of(record: Mapping[str, Any]) -> Mapping[str, Any] | None:
    response = record.get("response")
    if isinstance(response, Mapping) and isinstance(response.get("body"), Mapping):
        response = response["body"]
    return response if isinstance(response, Mapping) else None


def is_pair(record: Mapping[str, Any]) -> bool:
    return "messages" not in record and isinstance(record.get("request"), Mapping)


def request_signals(request: Mapping[str, Any]) -> set[str]:
    out: set[str] = set()
    messages = request.get("messages")
    if isinstance(request.get("input"), list | str) or "instructions" in request:
        out.add("openai_responses")
    if "system" in request:
        out.add("anthropic")
    tools = request.get("tools")
    if isinstance(tools, list) and tools and isinstance(tools[0], Mapping):
        out.add("anthropic" if "input_schema" in tools[0] else "openai")
    if isinstance(messages, list):
        for m in messages:
            if not isinstance(m, Mapping):
                continue
            if m.get("role") in ("system", "tool", "developer", "function") or "tool_calls" in m:
                out.add("openai")
            content = m.get("content")
            if isinstance(content, list) and any(
                isinstance(b, Mapping) and b.get("type") in _ANTHROPIC_BLOCKS for b in content
            ):
                out.add("anthropic")
    return out


def _response_signals(response: Mapping[str, Any] | None) -> set[str]:
    if not response:
        return set()
    out: set[str] = set()
    if response.get("type") == "message" or (
        isinstance(response.get("content"), list) and "stop_reason" in response
    ):
        out.add("anthropic")
    if isinstance(response.get("choices"), list):
        out.add("openai")
    if response.get("object") == "response" or isinstance(response.get("output"), list):
        out.add("openai_responses")
    return out


def pair_kind(record: Mapping[str, Any]) -> str:
    """``anthropic``, ``openai`` (Chat Completions) or ``openai_responses``; raises
    UnknownFormatError with the reason when the halves disagree or say nothing."""
    request = record["request"]
    req, resp = request_signals(request), _response_signals(response_of(record))
    kinds = resp or req
    if resp and req and not req <= resp:
        raise UnknownFormatError(
            f"ambiguous request/response pair: the request looks like {_names(req)} but the "
            f"response like {_names(resp)}; pass --format to say which"
        )
    if len(kinds) > 1:
        raise UnknownFormatError(
            f"ambiguous request/response pair: it looks like {_names(kinds)} at once; "
            "pass --format to say which"
        )
    if kinds:
        return next(iter(kinds))
    if isinstance(request.get("messages"), list):
        return "openai"  # plain role/content strings: both APIs read them the same way
    raise UnknownFormatError(
        "request/response pair with neither messages nor input in the request; "
        f"request keys: {sorted(request)[:12]}"
    )


def checked_pair_kind(record: Mapping[str, Any], wanted: str) -> str:
    """The pair's kind when the user named a format: an ambiguous pair is read as asked,
    a pair that clearly is another API is refused (reading it would drop half of it)."""
    try:
        kind = pair_kind(record)
    except UnknownFormatError:
        return wanted
    if (kind == "anthropic") != (wanted == "anthropic"):
        raise SchemaViolation(
            f"this is an {_names({kind})} request/response pair, not "
            f"{'Anthropic' if wanted == 'anthropic' else 'OpenAI'}; use --format "
            f"{'anthropic' if kind == 'anthropic' else 'openai'} or auto"
        )
    return kind


def _names(kinds: set[str]) -> str:
    label = {
        "anthropic": "Anthropic Messages",
        "openai": "OpenAI Chat Completions",
        "openai_responses": "OpenAI Responses",
    }
    return " and ".join(label[k] for k in sorted(kinds))


def _outer(record: Mapping[str, Any]) -> dict[str, Any]:
    """Top-level fields beside the pair (id, metadata, outcome ...)."""
    return {k: v for k, v in record.items() if k not in ("request", "response")}


def anthropic_record(record: Mapping[str, Any]) -> dict[str, Any]:
    """The pair as one Anthropic record: request fields, the response as ``response``."""
    request = dict(record["request"])
    response = response_of(record)
    out: dict[str, Any] = {**_outer(record), **request}
    if response is not None:
        out["response"] = {"type": "message", **response}
    if "metadata" in request and "metadata" in record:
        out["metadata"] = {**request["metadata"], **record["metadata"]}
    return out


def responses_record(record: Mapping[str, Any]) -> dict[str, Any]:
    """The pair as one Responses API record: request ``input``, response ``output``."""
    request = dict(record["request"])
    response = dict(response_of(record) or {})
    out: dict[str, Any] = {**_outer(record), **request}
    output = response.pop("output", None)
    if output is not None:
        out["output"] = output
    extra = {k: v for k, v in response.items() if k not in ("object",)}
    if extra:
        out["response"] = extra
    if "id" not in out and response.get("id"):
        out["id"] = response["id"]
    if "model" not in out and response.get("model"):
        out["model"] = response["model"]
    return out
