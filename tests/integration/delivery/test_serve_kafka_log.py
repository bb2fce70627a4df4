"""``rlstream serve --log-kafka``: each served exchange lands on the raw topic of the
harness's real broker, keyed by conversation id, as a record ingest's format detection reads
as canonical with the serving model id kept."""

from __future__ import annotations

import asyncio
import time
import uuid
from typing import Any

import orjson
import pytest
from starlette.testclient import TestClient

from rlstream.formats import detect_format, parse_record
from rlstream.services.cli.servehttp.app import State, build_app
from rlstream.services.cli.servehttp.engine import Output
from rlstream.services.cli.servehttp.sinks import KafkaSink
from rlstream.serving.api import ChatRequest
from rlstream.settings import Settings
from rlstream_testkit.stack import read_topic

pytestmark = pytest.mark.kafka


class Canned:
    def complete(self, req: ChatRequest, max_new: int) -> Output:
        return Output("Your order shipped.", prompt_tokens=5, completion_tokens=4, finished=True)


def test_served_exchange_is_published_to_the_raw_topic(kafka: Any) -> None:
    topic = f"serve-raw-{uuid.uuid4().hex[:8]}"
    kafka.create_topics([topic])
    sink = KafkaSink(Settings(kafka_bootstrap=kafka.bootstrap), topic)
    st = State(model_id="model-abc", load=Canned, sink=sink, agent="support-bot")  # type: ignore[arg-type]
    body = {"messages": [{"role": "user", "content": "Where is A-1?"}]}
    with TestClient(build_app(st)) as c:
        for _ in range(500):
            if c.get("/readyz").status_code == 200:
                break
            time.sleep(0.01)
        res = c.post("/v1/chat/completions", json=body, headers={"X-Conversation-Id": "k-1"})
        assert res.status_code == 200, res.text
        assert 'rlstream_serve_logged_total{result="ok",sink="kafka"}' in c.get("/metrics").text
    (rec,) = asyncio.run(read_topic(kafka.bootstrap, topic))
    assert rec.key == b"k-1"
    value = orjson.loads(rec.value)
    assert detect_format(value) == "canonical"
    t = parse_record(value)  # what ingest does with a raw record
    assert t.model == "model-abc" and t.agent == "support-bot"
    assert [m.text for m in t.messages] == ["Where is A-1?", "Your order shipped."]
