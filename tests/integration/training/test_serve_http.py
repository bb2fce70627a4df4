"""``rlstream serve`` as a real process on the small base model: OpenAI-shaped answers
(non-streaming and SSE), health and metrics, and every served conversation logged as a
record ``rlstream ingest`` accepts with the serving model id kept and PII redacted."""

from __future__ import annotations

import os
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import httpx
import orjson
import pytest
from typer.testing import CliRunner

from rlstream.services.cli.main import app

pytestmark = [pytest.mark.train, pytest.mark.filterwarnings("ignore::FutureWarning")]

MODEL_ID = "serve-test-model"


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@pytest.fixture(scope="module")
def server(
    base_model: Path, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[tuple[str, Path]]:
    log = tmp_path_factory.mktemp("serve") / "served.jsonl"
    port = _free_port()
    cmd = [sys.executable, "-m", "rlstream.services.cli.main", "serve", str(base_model)]
    cmd += ["--model-id", MODEL_ID, "--port", str(port), "--log-jsonl", str(log)]
    proc = subprocess.Popen(
        cmd, env=dict(os.environ), stdout=subprocess.PIPE, stderr=subprocess.STDOUT
    )
    url = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + 180
        while True:
            assert proc.poll() is None, proc.stdout.read().decode() if proc.stdout else ""
            try:
                if httpx.get(url + "/readyz", timeout=2).status_code == 200:
                    break
            except httpx.TransportError:
                pass
            assert time.monotonic() < deadline, "server not ready in 180 s"
            time.sleep(0.5)
        yield url, log
    finally:
        proc.terminate()
        proc.wait(30)


def test_models_health_and_a_bad_request(server: tuple[str, Path]) -> None:
    url, _ = server
    assert httpx.get(url + "/healthz").status_code == 200
    models = httpx.get(url + "/v1/models").json()
    assert models["object"] == "list" and models["data"][0]["id"] == MODEL_ID
    bad = httpx.post(url + "/v1/chat/completions", json={"messages": []})
    assert bad.status_code == 400 and bad.json()["error"]["type"] == "invalid_request_error"


def test_completion_non_streaming_is_openai_shaped_and_logged(server: tuple[str, Path]) -> None:
    url, log = server
    body = {
        "model": MODEL_ID,
        "messages": [
            {"role": "system", "content": "You are a support agent."},
            {"role": "user", "content": "Hi, I am ann.lee@example.com. Where is order A-48213?"},
        ],
        "max_tokens": 8,
        "temperature": 0,
    }
    res = httpx.post(
        url + "/v1/chat/completions",
        json=body,
        headers={"X-Conversation-Id": "c-plain"},
        timeout=120,
    )
    assert res.status_code == 200, res.text
    out = res.json()
    assert out["object"] == "chat.completion" and out["model"] == MODEL_ID
    choice = out["choices"][0]
    assert choice["message"]["role"] == "assistant" and choice["message"]["content"]
    assert choice["finish_reason"] in ("stop", "length")
    usage = out["usage"]
    assert 0 < usage["completion_tokens"] <= 8
    assert usage["total_tokens"] == usage["prompt_tokens"] + usage["completion_tokens"]
    logged = [orjson.loads(line) for line in log.read_bytes().splitlines()]
    mine = [r for r in logged if r["conversation_id"] == "c-plain"]
    assert len(mine) == 1 and mine[0]["model"] == MODEL_ID
    assert mine[0]["messages"][-1] == {
        **mine[0]["messages"][-1],
        "role": "assistant",
        "content": choice["message"]["content"],
    }
    metrics = httpx.get(url + "/metrics").text
    assert 'rlstream_serve_requests_total{status="200",stream="false"}' in metrics
    assert 'rlstream_serve_logged_total{result="ok",sink="jsonl"}' in metrics


def test_completion_streams_sse_chunks_and_logs_the_whole_reply(server: tuple[str, Path]) -> None:
    url, log = server
    body = {
        "messages": [{"role": "user", "content": "Say hello."}],
        "max_tokens": 8,
        "stream": True,
        "stream_options": {"include_usage": True},
    }
    with httpx.stream(
        "POST",
        url + "/v1/chat/completions",
        json=body,
        headers={"X-Conversation-Id": "c-stream"},
        timeout=120,
    ) as res:
        assert res.status_code == 200 and res.headers["content-type"].startswith(
            "text/event-stream"
        )
        events = [line[6:] for line in res.iter_lines() if line.startswith("data: ")]
    assert events[-1] == "[DONE]"
    chunks = [orjson.loads(e) for e in events[:-1]]
    assert all(c["object"] == "chat.completion.chunk" and c["model"] == MODEL_ID for c in chunks)
    assert chunks[0]["choices"][0]["delta"]["role"] == "assistant"
    text = "".join(c["choices"][0]["delta"].get("content") or "" for c in chunks if c["choices"])
    finishes = [c["choices"][0]["finish_reason"] for c in chunks if c["choices"]]
    assert finishes[-1] in ("stop", "length") and all(f is None for f in finishes[:-1])
    assert chunks[-1]["choices"] == [] and 0 < chunks[-1]["usage"]["completion_tokens"] <= 8
    assert text.strip()
    rec = next(orjson.loads(x) for x in log.read_bytes().splitlines() if b'"c-stream"' in x)
    assert rec["model"] == MODEL_ID and rec["messages"][-1]["content"] == text.strip()


def test_rlstream_ingest_accepts_the_log_keeping_the_model_and_redacting_pii(
    server: tuple[str, Path], tmp_path: Path
) -> None:
    url, log = server
    httpx.post(
        url + "/v1/chat/completions",
        json={
            "messages": [{"role": "user", "content": "Mail bob@example.com please"}],
            "max_tokens": 2,
        },
        headers={"X-Conversation-Id": "c-pii"},
        timeout=120,
    ).raise_for_status()
    out = tmp_path / "transcripts.jsonl"
    res = CliRunner().invoke(app, ["ingest", str(log), "--out", str(out), "--max-rejects", "0"])
    assert res.exit_code == 0, res.output
    rows = {r["conversation_id"]: r for r in map(orjson.loads, out.read_bytes().splitlines())}
    assert {"c-plain", "c-stream", "c-pii"} <= rows.keys()
    assert all(r["model"] == MODEL_ID for r in rows.values())
    pii = rows["c-pii"]
    assert pii["redacted"] and "bob@example.com" not in orjson.dumps(pii).decode()


def test_tools_and_earlier_tool_calls_render_with_the_real_template(
    server: tuple[str, Path],
) -> None:
    url, log = server
    tools = [{"type": "function", "function": {"name": "lookup_order", "parameters": {}}}]
    call = {
        "id": "c1",
        "type": "function",
        "function": {"name": "lookup_order", "arguments": '{"id": "A-1"}'},
    }
    messages = [
        {"role": "user", "content": "Where is A-1?"},
        {"role": "assistant", "content": None, "tool_calls": [call]},
        {"role": "tool", "tool_call_id": "c1", "content": "shipped"},
    ]
    res = httpx.post(
        url + "/v1/chat/completions",
        json={"messages": messages, "tools": tools, "max_tokens": 4},
        headers={"X-Conversation-Id": "c-tools"},
        timeout=120,
    )
    assert res.status_code == 200, res.text
    assert res.json()["choices"][0]["finish_reason"] in ("stop", "length", "tool_calls")
    rec = next(orjson.loads(x) for x in log.read_bytes().splitlines() if b'"c-tools"' in x)
    assert rec["tools"] == tools and rec["messages"][1]["tool_calls"][0]["arguments"] == {
        "id": "A-1"
    }


def test_the_official_openai_client_chats_and_streams(server: tuple[str, Path]) -> None:
    """What a user's code does: the ``openai`` package pointed at the server's /v1."""
    from openai import OpenAI

    url, log = server
    oa = OpenAI(base_url=url + "/v1", api_key="unused", timeout=120, max_retries=0)
    assert [m.id for m in oa.models.list()] == [MODEL_ID]
    msgs = [{"role": "user", "content": "Say hello."}]
    out = oa.chat.completions.create(
        model=MODEL_ID, messages=msgs, max_tokens=8, extra_headers={"X-Conversation-Id": "c-oa"}
    )
    assert out.model == MODEL_ID and out.choices[0].message.content
    assert out.choices[0].finish_reason in ("stop", "length")
    assert out.usage is not None and 0 < out.usage.completion_tokens <= 8
    stream = oa.chat.completions.create(
        model=MODEL_ID, messages=msgs, max_tokens=8, stream=True,
        stream_options={"include_usage": True}, extra_headers={"X-Conversation-Id": "c-oa-s"},
    )  # fmt: skip
    chunks = list(stream)
    text = "".join(c.choices[0].delta.content or "" for c in chunks if c.choices)
    assert text.strip() and chunks[-1].usage is not None
    recs = {
        r["conversation_id"]: r
        for r in map(orjson.loads, log.read_bytes().splitlines())
        if r.get("conversation_id") in ("c-oa", "c-oa-s")
    }
    assert {r["model"] for r in recs.values()} == {MODEL_ID} and len(recs) == 2
    assert recs["c-oa-s"]["messages"][-1]["content"] == text.strip()
