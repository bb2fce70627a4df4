"""OpenAI shapes, tool-call parsing and the served-exchange record (no model needed)."""

from __future__ import annotations

from datetime import UTC, datetime

import orjson
import pytest
from pydantic import ValidationError

from rlstream.formats.builtin import parse_canonical
from rlstream.formats.detect import is_canonical
from rlstream.serving.api import (
    ChatChunk,
    ChatRequest,
    ChunkChoice,
    Delta,
    FunctionCall,
    ReplyMessage,
    ToolCallOut,
    sse,
)
from rlstream.serving.record import exchange_record
from rlstream.serving.toolparse import fence_start, split_reply
from rlstream.training.chat import assistant_text


def test_request_accepts_openai_client_fields_and_content_parts() -> None:
    req = ChatRequest.model_validate(
        {
            "model": "champion",
            "messages": [
                {"role": "developer", "content": "be brief"},
                {
                    "role": "user",
                    "content": [{"type": "text", "text": "hi "}, {"type": "text", "text": "there"}],
                },
            ],
            "presence_penalty": 0.1,
            "logprobs": False,
            "max_completion_tokens": 9,
            "max_tokens": 50,
            "stream_options": {"include_usage": True},
        }
    )
    assert req.messages[1].text == "hi there"
    assert req.token_limit(default=128, ceiling=512) == 9
    assert ChatRequest(messages=req.messages, max_tokens=4000).token_limit(128, 512) == 512
    assert req.include_usage()


@pytest.mark.parametrize(
    "body",
    [
        {"messages": []},
        {"messages": [{"role": "robot", "content": "x"}]},
        {"messages": [{"role": "user"}], "n": 2},
    ],
)
def test_request_refuses_what_cannot_be_served(body: dict[str, object]) -> None:
    with pytest.raises(ValidationError):
        ChatRequest.model_validate(body)


def test_split_reply_reads_the_training_templates_tool_calls() -> None:
    text = assistant_text(
        {
            "role": "assistant",
            "content": "Let me check.",
            "tool_calls": [
                {"function": {"name": "lookup_order", "arguments": {"order_id": "A-1"}}}
            ],
        }
    )
    content, calls = split_reply(text)
    assert content == "Let me check."
    assert [(c.function.name, orjson.loads(c.function.arguments)) for c in calls] == [
        ("lookup_order", {"order_id": "A-1"})
    ]
    assert calls[0].id.startswith("call_") and calls[0].type == "function"


def test_split_reply_keeps_plain_text_and_non_call_fences() -> None:
    assert split_reply("Hello there.") == ("Hello there.", [])
    code = "Use:\n```json\n[1, 2]\n```"
    assert split_reply(code) == (code, [])
    only = '```json\n{"name": "refund", "arguments": {"amount": 5}}\n```'
    content, calls = split_reply(only)
    assert content is None and calls[0].function.name == "refund"


def test_fence_start_holds_back_a_possible_fence() -> None:
    assert fence_start("plain") == -1
    assert fence_start("text ``") == 5
    assert fence_start("text `") == 5
    assert fence_start('ok ```json\n{"name"') == 3


def test_sse_chunk_is_openai_shaped() -> None:
    chunk = ChatChunk(
        id="chatcmpl-1", created=1, model="m", choices=[ChunkChoice(delta=Delta(content="Hi"))]
    )
    raw = sse(chunk)
    assert raw.startswith(b"data: ") and raw.endswith(b"\n\n")
    body = orjson.loads(raw[6:])
    assert body["object"] == "chat.completion.chunk" and "usage" not in body
    assert body["choices"][0]["delta"]["content"] == "Hi"


def test_exchange_record_is_canonical_and_tagged_with_the_model() -> None:
    req = ChatRequest.model_validate(
        {
            "messages": [
                {"role": "system", "content": "You are support."},
                {"role": "user", "content": "Where is A-1? mail me at a@b.example"},
                {
                    "role": "assistant",
                    "content": None,
                    "tool_calls": [
                        {
                            "id": "c1",
                            "type": "function",
                            "function": {"name": "lookup", "arguments": '{"id": "A-1"}'},
                        }
                    ],
                },
                {"role": "tool", "tool_call_id": "c1", "content": "shipped"},
            ],
            "tools": [{"type": "function", "function": {"name": "lookup", "parameters": {}}}],
        }
    )
    reply = ReplyMessage(
        content=None,
        tool_calls=[ToolCallOut(id="c2", function=FunctionCall(name="notify", arguments="{}"))],
    )
    now = datetime(2026, 1, 1, tzinfo=UTC)
    rec = exchange_record(
        conversation_id="serve-1",
        messages=req.messages,
        reply=reply,
        model_id="3f2a9c1b7d0e",
        tools=req.tools,
        started_at=now,
        ended_at=now,
    )
    assert is_canonical(rec)
    t = parse_canonical(orjson.loads(orjson.dumps(rec)))
    assert t.model == "3f2a9c1b7d0e" and t.policy == "3f2a9c1b7d0e"
    assert [m.role for m in t.messages] == ["system", "user", "assistant", "tool", "assistant"]
    assert t.messages[2].tool_calls[0].arguments == {"id": "A-1"}
    assert t.messages[-1].tool_calls[0].name == "notify"
    assert not t.redacted  # redaction is ingest's job
    assert t.tools[0]["function"] == {"name": "lookup", "parameters": {}}
