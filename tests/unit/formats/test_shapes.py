"""Less common shapes each parser accepts, and the errors it raises on bad input."""

from __future__ import annotations

import pytest

from rlstream.errors import ConfigError, SchemaViolation, UnknownFormatError
from rlstream.formats import FieldMapping, detect_format, parse_record, to_format
from rlstream.formats._common import get_path

pytestmark = pytest.mark.unit


def test_openai_chat_completion_choices_are_appended() -> None:
    rec = {
        "id": "x",
        "messages": [{"role": "user", "content": "hi"}],
        "choices": [
            {
                "index": 0,
                "finish_reason": "stop",
                "message": {"role": "assistant", "content": "hello"},
            }
        ],
    }
    t = parse_record(rec)
    assert [m.role for m in t.messages] == ["user", "assistant"]
    assert t.metadata["choices"] == [{"index": 0, "finish_reason": "stop"}]


def test_openai_unparseable_arguments_are_kept_raw() -> None:
    rec = {
        "messages": [
            {
                "role": "assistant",
                "tool_calls": [
                    {
                        "id": "c1",
                        "type": "function",
                        "function": {"name": "f", "arguments": "{oops"},
                    }
                ],
            }
        ]
    }
    call = parse_record(rec).messages[0].tool_calls[0]
    assert (call.arguments, call.raw_arguments) == ("{oops", "{oops")
    assert (
        to_format(parse_record(rec), "openai")["messages"][0]["tool_calls"][0]["function"][
            "arguments"
        ]
        == "{oops"
    )


def test_openai_legacy_function_call_round_trips_in_its_own_shape() -> None:
    rec = {
        "messages": [
            {
                "role": "assistant",
                "content": None,
                "function_call": {"name": "f", "arguments": "{}"},
            },
            {"role": "function", "name": "f", "content": "ok"},
        ]
    }
    t = parse_record(rec)
    assert t.messages[1].role == "tool" and t.messages[1].name == "f"
    out = to_format(t, "openai")["messages"]
    assert out[0]["function_call"] == {"name": "f", "arguments": "{}"}
    assert out[1]["role"] == "function"


def test_anthropic_response_pair_and_multiple_results() -> None:
    rec = {
        "system": "sys",
        "messages": [
            {"role": "user", "content": "do two things"},
            {
                "role": "assistant",
                "content": [
                    {"type": "tool_use", "id": "a", "name": "f", "input": {}},
                    {"type": "tool_use", "id": "b", "name": "g", "input": {"x": 1}},
                ],
            },
            {
                "role": "user",
                "content": [
                    {"type": "tool_result", "tool_use_id": "a", "content": "A"},
                    {"type": "tool_result", "tool_use_id": "b", "content": "B", "is_error": True},
                    {"type": "text", "text": "and now?"},
                ],
            },
        ],
        "response": {
            "type": "message",
            "id": "msg_1",
            "role": "assistant",
            "content": [{"type": "text", "text": "done"}],
            "stop_reason": "end_turn",
        },
    }
    assert detect_format(rec) == "anthropic"
    t = parse_record(rec)
    assert [(m.role, m.tool_call_id, m.name, m.is_error) for m in t.messages[3:5]] == [
        ("tool", "a", "f", False),
        ("tool", "b", "g", True),
    ]
    assert t.messages[5].content == "and now?"
    assert t.messages[6].content == "done" and t.messages[6].extra["stop_reason"] == "end_turn"


def test_sharegpt_parallel_calls_merge_and_unknown_speaker_fails() -> None:
    rec = {
        "conversations": [
            {"from": "human", "value": "q"},
            {"from": "gpt", "value": "calling"},
            {"from": "function_call", "value": '{"name": "a", "arguments": "{\\"k\\": 1}"}'},
            {"from": "function_call", "value": '{"name": "b", "arguments": {}}'},
            {"from": "observation", "value": "r1"},
        ]
    }
    t = parse_record(rec)
    assert [c.name for c in t.messages[1].tool_calls] == ["a", "b"]
    assert t.messages[1].content == "calling"
    assert t.messages[1].tool_calls[0].arguments == {"k": 1}
    assert t.messages[2].name == "b"
    with pytest.raises(SchemaViolation):
        parse_record({"conversations": [{"from": "narrator", "value": "x"}]})


def test_langchain_messages_to_dict_and_tuples() -> None:
    rec = {
        "run_type": "llm",
        "id": "r1",
        "inputs": {
            "messages": [
                {"type": "human", "data": {"content": "hi"}},
                ["ai", "yo"],
                {"role": "user", "content": "and?"},
            ]
        },
        "outputs": {"generations": [[{"text": "fine"}]]},
    }
    t = parse_record(rec)
    assert [(m.role, m.content) for m in t.messages] == [
        ("user", "hi"),
        ("assistant", "yo"),
        ("user", "and?"),
        ("assistant", "fine"),
    ]
    assert t.conversation_id == "r1"


def test_otel_events_and_otlp_export() -> None:
    span = {
        "traceId": "t1",
        "spanId": "s1",
        "attributes": [
            {"key": "gen_ai.request.model", "value": {"stringValue": "m"}},
            {"key": "gen_ai.system", "value": {"stringValue": "openai"}},
        ],
        "events": [
            {
                "name": "gen_ai.user.message",
                "attributes": [{"key": "content", "value": {"stringValue": "hi"}}],
            },
            {
                "name": "gen_ai.choice",
                "body": {"message": {"content": "hello"}, "finish_reason": "stop"},
            },
            {"name": "exception", "attributes": {"exception.type": "X"}},
        ],
    }
    export = {
        "resourceSpans": [
            {
                "resource": {},
                "scopeSpans": [{"spans": [{"spanId": "other", "attributes": []}, span]}],
            }
        ]
    }
    assert detect_format(export) == "otel"
    t = parse_record(export)
    assert [(m.role, m.content) for m in t.messages] == [("user", "hi"), ("assistant", "hello")]
    assert t.model == "m" and t.conversation_id == "s1"
    assert t.metadata["events"] == [{"name": "exception", "attributes": {"exception.type": "X"}}]
    assert t.metadata["other_spans"] == [{"spanId": "other", "attributes": []}]


def test_detect_rejects_unknown_shapes() -> None:
    with pytest.raises(UnknownFormatError):
        detect_format({"text": "hello"})
    with pytest.raises(UnknownFormatError):
        parse_record(["not", "a", "dict"])
    with pytest.raises(UnknownFormatError):
        parse_record({"messages": []}, fmt="nope")
    with pytest.raises(ConfigError):
        to_format(parse_record({"messages": []}), "nope")


def test_mapping_message_format_and_missing_fields() -> None:
    m = FieldMapping(
        messages_field="data.turns", message_format="sharegpt", role_key="from", content_key="value"
    )
    t = parse_record({"data": {"turns": [{"from": "human", "value": "hi"}]}}, mapping=m)
    assert t.messages[0].role == "user"
    with pytest.raises(SchemaViolation):
        parse_record({"data": {}}, mapping=m)
    with pytest.raises(SchemaViolation):
        parse_record({"messages": []}, mapping=FieldMapping(id_field="meta.id"))


def test_get_path_handles_lists_and_dotted_keys() -> None:
    rec = {"a": [{"b": 1}], "attributes": {"gen_ai.conversation.id": "c"}}
    assert get_path(rec, "a.0.b") == 1
    assert get_path(rec, "attributes.gen_ai.conversation.id") == "c"
    assert get_path(rec, "a.5.b") is None and get_path(rec, "x.y") is None


def test_otel_openinference_attributes() -> None:
    span = {
        "context": {"trace_id": "0xabc", "span_id": "0xdef"},
        "name": "ChatCompletion",
        "attributes": {
            "llm.model_name": "gpt-4o-mini",
            "session.id": "sess-42",
            "llm.input_messages.0.message.role": "system",
            "llm.input_messages.0.message.content": "Be brief.",
            "llm.input_messages.1.message.role": "user",
            "llm.input_messages.1.message.content": "Weather in Oslo?",
            "llm.output_messages.0.message.role": "assistant",
            "llm.output_messages.0.message.tool_calls.0.tool_call.id": "call_9",
            "llm.output_messages.0.message.tool_calls.0.tool_call.function.name": "weather",
            "llm.output_messages.0.message.tool_calls.0.tool_call.function.arguments": '{"city": "Oslo"}',
            "openinference.span.kind": "LLM",
        },
    }
    assert detect_format(span) == "otel"
    t = parse_record(span)
    assert t.conversation_id == "sess-42" and t.model == "gpt-4o-mini"
    assert [m.role for m in t.messages] == ["system", "user", "assistant"]
    call = t.messages[2].tool_calls[0]
    assert (call.id, call.name, call.arguments) == ("call_9", "weather", {"city": "Oslo"})
    assert t.metadata["attributes"]["openinference.span.kind"] == "LLM"
    assert t.metadata["trace_id"] == "0xabc"


def test_openai_responses_api_items() -> None:
    rec = {
        "id": "resp_123",
        "object": "response",
        "model": "gpt-4.1",
        "instructions": "You are a shop assistant.",
        "input": [
            {"role": "user", "content": [{"type": "input_text", "text": "Where is order 7?"}]},
            {
                "type": "function_call",
                "id": "fc_1",
                "call_id": "call_7",
                "name": "track",
                "arguments": '{"order": 7}',
            },
            {
                "type": "function_call_output",
                "call_id": "call_7",
                "output": '{"status": "shipped"}',
            },
        ],
        "output": [
            {"type": "reasoning", "id": "rs_1", "summary": []},
            {
                "type": "message",
                "id": "msg_1",
                "role": "assistant",
                "content": [{"type": "output_text", "text": "It shipped."}],
            },
        ],
        "usage": {"total_tokens": 50},
    }
    assert detect_format(rec) == "openai"
    t = parse_record(rec)
    assert t.conversation_id == "resp_123" and t.model == "gpt-4.1"
    assert [(m.role, m.content) for m in t.messages] == [
        ("system", "You are a shop assistant."),
        ("user", "Where is order 7?"),
        ("assistant", None),
        ("tool", '{"status": "shipped"}'),
        ("assistant", "It shipped."),
    ]
    call = t.messages[2].tool_calls[0]
    assert (call.id, call.name, call.arguments, call.extra) == (
        "call_7",
        "track",
        {"order": 7},
        {"id": "fc_1"},
    )
    assert t.messages[3].tool_call_id == "call_7" and t.messages[3].name == "track"
    assert t.metadata["other_items"] == [{"type": "reasoning", "id": "rs_1", "summary": []}]
    assert t.metadata["usage"] == {"total_tokens": 50}


def test_gemini_snake_case_and_results_without_ids() -> None:
    rec = {
        "system_instruction": {"parts": [{"text": "sys"}]},
        "contents": [
            {"role": "user", "parts": [{"text": "hi"}]},
            {"role": "model", "parts": [{"function_call": {"name": "f", "args": {"x": 1}}}]},
            {
                "role": "user",
                "parts": [{"function_response": {"name": "f", "response": {"rows": [1, 2]}}}],
            },
        ],
        "tools": [{"function_declarations": [{"name": "f", "parameters": {"type": "object"}}]}],
    }
    assert detect_format(rec) == "gemini"
    t = parse_record(rec)
    assert [m.role for m in t.messages] == ["system", "user", "assistant", "tool"]
    assert (t.messages[2].tool_calls[0].name, t.messages[2].tool_calls[0].arguments) == (
        "f",
        {"x": 1},
    )
    result = t.messages[3]
    assert (result.name, result.content, result.extra["content_raw"]) == (
        "f",
        '{"rows":[1,2]}',
        {"rows": [1, 2]},
    )
    assert t.tools == ({"name": "f", "parameters": {"type": "object"}},)
    back = to_format(t, "gemini")
    assert back["contents"][2]["parts"][0]["functionResponse"]["response"] == {"rows": [1, 2]}
