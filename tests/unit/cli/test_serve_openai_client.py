"""``rlstream serve`` through the official ``openai`` Python client (what users point at it):
``models.list``, a chat completion, a streamed one, and tool calls whole and streamed parse
into the client's own types. The app runs with a scripted engine over Starlette's test
transport; tests/integration/training/test_serve_http.py runs the client against the real
process and model."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import pytest
from openai import OpenAI
from test_serve_app import BODY, Scripted, _client, _ready

pytestmark = pytest.mark.unit


@pytest.fixture
def scripted() -> Scripted:
    return Scripted()


@pytest.fixture
def client(tmp_path: Path, scripted: Scripted) -> Iterator[OpenAI]:
    with _client(tmp_path, scripted) as http:
        _ready(http)
        yield OpenAI(base_url="http://testserver/v1", api_key="unused", http_client=http)


def test_models_and_a_plain_chat(tmp_path: Path) -> None:
    with _client(tmp_path, Scripted("Your order ships today.")) as http:
        _ready(http)
        oa = OpenAI(base_url="http://testserver/v1", api_key="unused", http_client=http)
        assert [m.id for m in oa.models.list()] == ["m-1"]
        out = oa.chat.completions.create(
            model="m-1", messages=[{"role": "user", "content": "Where is A-1?"}], max_tokens=8
        )
    assert out.model == "m-1" and out.object == "chat.completion"
    choice = out.choices[0]
    assert choice.message.role == "assistant"
    assert choice.message.content == "Your order ships today."
    assert choice.message.tool_calls is None and choice.finish_reason == "stop"
    assert out.usage is not None and out.usage.total_tokens == 18


def test_tool_call_parses_into_the_clients_types(client: OpenAI, scripted: Scripted) -> None:
    out = client.chat.completions.create(
        model="m-1", messages=BODY["messages"], tools=BODY["tools"]
    )
    choice = out.choices[0]
    assert choice.finish_reason == "tool_calls"
    assert choice.message.content == "Let me look."
    (call,) = choice.message.tool_calls or []
    assert call.type == "function" and call.id.startswith("call_")
    assert call.function.name == "lookup_order"
    assert json.loads(call.function.arguments) == {"order_id": "A-1"}
    assert scripted.seen[-1].tools  # the tools reached the engine's request


def test_streamed_tool_call_reassembles(client: OpenAI) -> None:
    stream = client.chat.completions.create(
        model="m-1", messages=BODY["messages"], tools=BODY["tools"], stream=True
    )
    text, name, args, finish = "", "", "", None
    for chunk in stream:
        assert chunk.object == "chat.completion.chunk" and chunk.model == "m-1"
        delta = chunk.choices[0].delta
        text += delta.content or ""
        for tc in delta.tool_calls or []:
            name += (tc.function and tc.function.name) or ""
            args += (tc.function and tc.function.arguments) or ""
        finish = chunk.choices[0].finish_reason or finish
    assert text.strip() == "Let me look."
    assert name == "lookup_order" and json.loads(args) == {"order_id": "A-1"}
    assert finish == "tool_calls"


def test_an_error_is_the_clients_exception(client: OpenAI) -> None:
    from openai import BadRequestError

    with pytest.raises(BadRequestError) as err:
        client.chat.completions.create(model="m-1", messages=[])
    assert err.value.status_code == 400
