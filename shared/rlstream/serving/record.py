"""A served exchange -> the canonical conversation record rlstream ingests.

The record is a canonical ``Transcript`` as JSON (``format="canonical"``), tagged with
``model`` = the serving model's id, so lineage links the conversation to the model that
produced it. It is written before redaction (``redacted=False``): the raw topic, or the
JSONL file in its place, is the input of ``rlstream ingest``, and PII is redacted there,
by the same path every other log takes.
"""

from __future__ import annotations

from datetime import datetime
from typing import Any

import orjson

from rlstream.serving.api import InMessage, ReplyMessage
from rlstream.transcript.model import Message, Role, ToolCall, Transcript


def _tool_call(call_id: str | None, name: str, arguments: Any) -> ToolCall:
    if isinstance(arguments, str):
        try:
            parsed: Any = orjson.loads(arguments)
        except orjson.JSONDecodeError:
            parsed = None
        return ToolCall(id=call_id, name=name, arguments=parsed, raw_arguments=arguments)
    return ToolCall(id=call_id, name=name, arguments=arguments)


def _message(m: InMessage) -> Message:
    role: Role = "system" if m.role == "developer" else m.role
    calls = tuple(
        _tool_call(c.id, c.function.name, c.function.arguments) for c in m.tool_calls or ()
    )
    return Message(
        role=role,
        content=m.text if m.content is not None else None,
        tool_calls=calls,
        tool_call_id=m.tool_call_id,
        name=m.name,
    )


def _reply(r: ReplyMessage) -> Message:
    calls = tuple(
        _tool_call(c.id, c.function.name, c.function.arguments) for c in r.tool_calls or ()
    )
    return Message(role="assistant", content=r.content, tool_calls=calls)


def exchange_record(
    *,
    conversation_id: str,
    messages: list[InMessage],
    reply: ReplyMessage,
    model_id: str,
    tools: list[dict[str, Any]] | None,
    started_at: datetime,
    ended_at: datetime,
    agent: str | None = None,
    metadata: dict[str, Any] | None = None,
) -> dict[str, Any]:
    """The request's messages plus the reply as one canonical record (JSON-ready)."""
    t = Transcript(
        conversation_id=conversation_id,
        messages=(*(_message(m) for m in messages), _reply(reply)),
        tools=tuple(tools or ()),
        model=model_id,
        agent=agent,
        started_at=started_at,
        ended_at=ended_at,
        metadata={"served_by": "rlstream serve", **(metadata or {})},
    )
    body: dict[str, Any] = orjson.loads(t.dump_json())
    return body
