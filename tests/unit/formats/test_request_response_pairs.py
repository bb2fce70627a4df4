"""SDK request/response pairs: Anthropic Messages, OpenAI Chat Completions and Responses.

Before: an Anthropic pair was detected as OpenAI and lost its system prompt, tool_use,
tool_result and final answer without a word, and --format anthropic rejected it.
"""

from __future__ import annotations

from typing import Any

import pytest

from rlstream.errors import InputError, UnknownFormatError
from rlstream.formats import detect_format, parse_record

pytestmark = pytest.mark.unit

ANTHROPIC_PAIR: dict[str, Any] = {
    "id": "log-1",
    "request": {
        "model": "claude-sonnet-4-5",
        "max_tokens": 1024,
        "system": "You are the orders assistant.",
        "tools": [
            {
                "name": "get_order",
                "description": "Look up an order",
                "input_schema": {"type": "object", "properties": {"id": {"type": "string"}}},
            }
        ],
        "messages": [
            {"role": "user", "content": "Where is order A-17?"},
            {
                "role": "assistant",
                "content": [
                    {"type": "text", "text": "Let me check."},
                    {
                        "type": "tool_use",
                        "id": "tu_1",
                        "name": "get_order",
                        "input": {"id": "A-17"},
                    },
                ],
            },
            {
                "role": "user",
                "content": [
                    {"type": "tool_result", "tool_use_id": "tu_1", "content": "shipped Monday"}
                ],
            },
        ],
    },
    "response": {
        "id": "msg_01",
        "type": "message",
        "role": "assistant",
        "model": "claude-sonnet-4-5",
        "content": [{"type": "text", "text": "Order A-17 shipped on Monday."}],
        "stop_reason": "end_turn",
        "usage": {"input_tokens": 120, "output_tokens": 12},
    },
}

CHAT_PAIR: dict[str, Any] = {
    "request": {
        "model": "gpt-4o",
        "messages": [
            {"role": "system", "content": "Be brief."},
            {"role": "user", "content": "2+2?"},
        ],
    },
    "response": {
        "id": "chatcmpl-1",
        "object": "chat.completion",
        "model": "gpt-4o",
        "choices": [
            {"index": 0, "message": {"role": "assistant", "content": "4"}, "finish_reason": "stop"}
        ],
    },
}

RESPONSES_PAIR: dict[str, Any] = {
    "request": {
        "model": "gpt-4.1",
        "instructions": "You are terse.",
        "input": [{"role": "user", "content": "Capital of France?"}],
    },
    "response": {
        "id": "resp_1",
        "object": "response",
        "model": "gpt-4.1",
        "output": [
            {
                "type": "message",
                "role": "assistant",
                "content": [{"type": "output_text", "text": "Paris."}],
            }
        ],
    },
}


def _roles(t: Any) -> list[tuple[str, str | None]]:
    return [(m.role, m.content) for m in t.messages]


@pytest.mark.parametrize("fmt", ["auto", "anthropic"])
def test_anthropic_pair_keeps_system_tool_use_result_and_answer(fmt: str) -> None:
    assert detect_format(ANTHROPIC_PAIR) == "anthropic"
    t = parse_record(ANTHROPIC_PAIR, fmt)
    assert t.format == "anthropic" and t.conversation_id == "log-1"
    assert _roles(t) == [
        ("system", "You are the orders assistant."),
        ("user", "Where is order A-17?"),
        ("assistant", "Let me check."),
        ("tool", "shipped Monday"),
        ("assistant", "Order A-17 shipped on Monday."),
    ]
    call = t.messages[2].tool_calls[0]
    assert (call.name, call.arguments, t.messages[3].tool_call_id) == (
        "get_order",
        {"id": "A-17"},
        "tu_1",
    )
    assert t.tools[0]["name"] == "get_order" and t.model == "claude-sonnet-4-5"


def test_openai_chat_pair_and_body_wrapper() -> None:
    for rec in (
        CHAT_PAIR,
        {**CHAT_PAIR, "response": {"status_code": 200, "body": CHAT_PAIR["response"]}},
    ):
        t = parse_record(rec, "auto")
        assert t.format == "openai"
        assert _roles(t) == [("system", "Be brief."), ("user", "2+2?"), ("assistant", "4")]


def test_openai_responses_pair() -> None:
    t = parse_record(RESPONSES_PAIR, "auto")
    assert t.format == "openai" and t.model == "gpt-4.1"
    assert _roles(t) == [
        ("system", "You are terse."),
        ("user", "Capital of France?"),
        ("assistant", "Paris."),
    ]


def test_auto_refuses_a_pair_whose_halves_disagree() -> None:
    mixed = {"request": ANTHROPIC_PAIR["request"], "response": CHAT_PAIR["response"]}
    with pytest.raises(UnknownFormatError, match="ambiguous"):
        parse_record(mixed, "auto")


def test_auto_refuses_a_messages_record_with_both_apis_marks() -> None:
    rec = {
        "system": "top-level system prompt (Anthropic)",
        "messages": [
            {"role": "user", "content": "hi"},
            {"role": "assistant", "tool_calls": [{"id": "c", "type": "function",
             "function": {"name": "f", "arguments": "{}"}}]},
        ],
    }  # fmt: skip
    with pytest.raises(UnknownFormatError, match="ambiguous"):
        detect_format(rec)


def test_naming_the_wrong_api_for_a_clear_pair_is_refused() -> None:
    with pytest.raises(InputError, match="--format anthropic"):
        parse_record(ANTHROPIC_PAIR, "openai")
    with pytest.raises(InputError, match="--format openai"):
        parse_record(CHAT_PAIR, "anthropic")
