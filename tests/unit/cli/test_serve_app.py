"""``rlstream serve``'s HTTP app with a scripted engine: tool calls reach the client in the
OpenAI shape (whole and streamed), text before a call streams at once, and the log record
carries the calls. The real model is exercised in tests/integration/training."""

from __future__ import annotations

import itertools
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import orjson
import pytest
from starlette.testclient import TestClient

from rlstream.services.cli.servehttp.app import State, build_app
from rlstream.services.cli.servehttp.engine import Output
from rlstream.services.cli.servehttp.sinks import JsonlSink
from rlstream.serving.api import ChatRequest

REPLY = 'Let me look.\n```json\n{"name": "lookup_order", "arguments": {"order_id": "A-1"}}\n```'


class Scripted:
    """Replies REPLY in pieces that split the fence, as a tokenizer may."""

    def __init__(self, text: str = REPLY) -> None:
        self.text = text
        self.seen: list[ChatRequest] = []

    def _out(self) -> Output:
        return Output(self.text, prompt_tokens=11, completion_tokens=7, finished=True)

    def complete(self, req: ChatRequest, max_new: int) -> Output:
        self.seen.append(req)
        return self._out()

    def stream(self, req: ChatRequest, max_new: int) -> tuple[Iterator[str], list[Output]]:
        self.seen.append(req)
        cuts = [0, 4, 13, 14, 15, 20, len(self.text)]
        return iter(self.text[a:b] for a, b in itertools.pairwise(cuts)), [self._out()]


def _client(tmp_path: Path, engine: Any) -> TestClient:
    st = State(model_id="m-1", load=lambda: engine, sink=JsonlSink(tmp_path / "log.jsonl"))
    return TestClient(build_app(st))


BODY = {
    "messages": [{"role": "user", "content": "Where is A-1?"}],
    "tools": [{"type": "function", "function": {"name": "lookup_order", "parameters": {}}}],
}


def _ready(c: TestClient) -> None:
    for _ in range(200):
        if c.get("/readyz").status_code == 200:
            return
        time.sleep(0.01)
    raise AssertionError("never ready")


def test_tool_call_non_streaming(tmp_path: Path) -> None:
    with _client(tmp_path, Scripted()) as c:
        _ready(c)
        out = c.post("/v1/chat/completions", json=BODY).json()
    choice = out["choices"][0]
    assert choice["finish_reason"] == "tool_calls"
    assert choice["message"]["content"] == "Let me look."
    (call,) = choice["message"]["tool_calls"]
    assert call["type"] == "function" and call["id"].startswith("call_")
    assert call["function"]["name"] == "lookup_order"
    assert orjson.loads(call["function"]["arguments"]) == {"order_id": "A-1"}
    (rec,) = map(orjson.loads, (tmp_path / "log.jsonl").read_bytes().splitlines())
    assert rec["model"] == "m-1" and rec["tools"] == BODY["tools"]
    assert rec["messages"][-1]["tool_calls"][0]["arguments"] == {"order_id": "A-1"}


def test_tool_call_streamed_as_tool_calls_delta(tmp_path: Path) -> None:
    with _client(tmp_path, Scripted()) as c:
        _ready(c)
        res = c.post("/v1/chat/completions", json={**BODY, "stream": True})
    events = [e[6:] for e in res.text.split("\n\n") if e.startswith("data: ")]
    assert events[-1] == "[DONE]"
    deltas = [orjson.loads(e)["choices"][0] for e in events[:-1]]
    text = "".join(d["delta"]["content"] or "" for d in deltas)
    assert text.strip() == "Let me look." and "```" not in text  # the fence was held back
    calls = [d["delta"]["tool_calls"] for d in deltas if d["delta"]["tool_calls"]]
    assert len(calls) == 1 and calls[0][0]["index"] == 0
    assert calls[0][0]["function"]["name"] == "lookup_order"
    assert deltas[-1]["finish_reason"] == "tool_calls"


def test_a_fence_that_is_not_a_call_streams_as_text(tmp_path: Path) -> None:
    text = "Here:\n```json\n[1, 2]\n```\nDone."
    with _client(tmp_path, Scripted(text)) as c:
        _ready(c)
        res = c.post("/v1/chat/completions", json={**BODY, "stream": True})
    chunks = [orjson.loads(e[6:]) for e in res.text.split("\n\n") if e.startswith("data: {")]
    streamed = "".join(ch["choices"][0]["delta"]["content"] or "" for ch in chunks)
    assert streamed == text and chunks[-1]["choices"][0]["finish_reason"] == "stop"


def test_not_ready_until_loaded_and_conversation_id_header(tmp_path: Path) -> None:
    def fail() -> Any:
        raise OSError("no weights")

    st = State(model_id="m-1", load=fail, sink=None)
    with TestClient(build_app(st)) as c:
        for _ in range(200):
            if st.error:
                break
            time.sleep(0.01)
        r = c.post("/v1/chat/completions", json=BODY)
        assert r.status_code == 503 and "no weights" in r.json()["error"]["message"]
        assert c.get("/readyz").status_code == 503 and c.get("/healthz").status_code == 200
    engine = Scripted("hi")
    with _client(tmp_path, engine) as c:
        _ready(c)
        r = c.post("/v1/chat/completions", json=BODY, headers={"X-Conversation-Id": "c-9"})
    assert r.headers["x-conversation-id"] == "c-9"
    (rec,) = map(orjson.loads, (tmp_path / "log.jsonl").read_bytes().splitlines())
    assert rec["conversation_id"] == "c-9"


def test_serve_cli_refuses_without_a_log_choice_or_a_model_folder(tmp_path: Path) -> None:
    from typer.testing import CliRunner

    from rlstream.services.cli.main import app

    res = CliRunner().invoke(app, ["serve"])
    assert res.exit_code == 2 and "--log-jsonl FILE, --log-kafka or --no-log" in res.output
    res = CliRunner().invoke(app, ["serve", str(tmp_path), "--no-log"])
    assert res.exit_code == 2 and "holds no adapter" in " ".join(res.output.split())


class Broken(Scripted):
    def complete(self, req: ChatRequest, max_new: int) -> Output:
        raise ValueError("template failed")


def test_a_generation_failure_is_a_500_in_the_openai_envelope(tmp_path: Path) -> None:
    with _client(tmp_path, Broken()) as c:
        _ready(c)
        r = c.post("/v1/chat/completions", json=BODY)
        assert r.status_code == 500 and r.json()["error"]["type"] == "server_error"
        assert (
            'rlstream_serve_requests_total{status="500",stream="false"}' in c.get("/metrics").text
        )
    assert not (tmp_path / "log.jsonl").exists()


def test_log_kafka_writes_the_prefixed_raw_topic_ingest_reads(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """With RLSTREAM_TOPIC_PREFIX set (tenancy, tests), served traffic goes to the same
    physical raw topic the services consume, not the bare contract name."""
    from rlstream.events import topics
    from rlstream.services.cli.serve_cmd import raw_topic

    monkeypatch.delenv("RLSTREAM_TOPIC_PREFIX", raising=False)
    assert raw_topic() == topics.CONVERSATIONS_RAW
    monkeypatch.setenv("RLSTREAM_TOPIC_PREFIX", "t1.")
    assert raw_topic() == "t1." + topics.CONVERSATIONS_RAW
