"""Tracing with the SDK's in-memory exporter: the consumer wrapper's spans, W3C context into
the outbox's records and out of consumed ones, log correlation, the child-process
environment, and every helper a no-op while tracing is off."""

from __future__ import annotations

import json
import logging
import sys
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any

import pytest

pytest.importorskip("opentelemetry.sdk.trace")

from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from opentelemetry.trace import StatusCode

from fakes.kafka import Batch, Producer
from rlstream.delivery import BatchRunner, Rejected, disposition
from rlstream.errors import ParseError
from rlstream.observability import Health, tracing, tracing_batch
from rlstream.observability.logs import JsonFormatter
from rlstream.settings import Settings

pytestmark = pytest.mark.unit

UPSTREAM_TRACE = 0x0AF7651916CD43DD8448EB211C80319C
UPSTREAM_SPAN = 0xB7AD6B7169203331
UPSTREAM = f"00-{UPSTREAM_TRACE:032x}-{UPSTREAM_SPAN:016x}-01"


@dataclass
class Rec:
    offset: int
    value: bytes = b"v"
    topic: str = "in"
    partition: int = 0
    timestamp: int = 0
    key: bytes | None = b"k"
    headers: list[tuple[str, bytes]] = field(default_factory=list)


class Msg:
    def __init__(self, recs: tuple[Rec, ...]) -> None:
        self.raw_message = recs
        self.acked = self.nacked = 0

    async def ack(self) -> None:
        self.acked += 1

    async def nack(self) -> None:
        self.nacked += 1


class HeaderBatch(Batch):
    def __init__(self, sink: list[tuple[bytes, list[tuple[str, bytes]]]]) -> None:
        super().__init__()
        self.sink = sink

    def append(self, *, key: bytes | None, value: bytes, timestamp: Any, headers: Any) -> Any:
        self.sink.append((value, list(headers)))
        return super().append(key=key, value=value, timestamp=timestamp, headers=headers)


class HeaderProducer(Producer):
    """The fake producer, keeping each record's headers (value -> headers)."""

    def __init__(self) -> None:
        super().__init__()
        self.records: list[tuple[bytes, list[tuple[str, bytes]]]] = []

    def create_batch(self) -> Batch:
        return HeaderBatch(self.records)

    def headers_of(self, value: bytes) -> dict[str, bytes]:
        return next(dict(h) for v, h in self.records if v == value)


@pytest.fixture
def spans() -> Iterator[InMemorySpanExporter]:
    exporter = InMemorySpanExporter()
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    tracing.install(provider, "test")
    yield exporter
    tracing.shutdown()


def by_name(exporter: InMemorySpanExporter) -> dict[str, list[Any]]:
    out: dict[str, list[Any]] = {}
    for s in exporter.get_finished_spans():
        out.setdefault(s.name, []).append(s)
    return out


def parse(traceparent: bytes) -> tuple[int, int]:
    _, trace_id, span_id, _ = traceparent.decode().split("-")
    return int(trace_id, 16), int(span_id, 16)


async def test_off_every_helper_is_a_no_op() -> None:
    assert not tracing.active()
    assert tracing.inject([("a", b"1")], Rec(0)) == [("a", b"1")]
    assert tracing.env_for_child() == {} and tracing.context_from_env({}) is None
    assert tracing.log_ids() is None
    with tracing.span("x") as s, tracing.activate(Rec(0)):
        assert s is None
    with tracing_batch.consume("grader", [Rec(0)]) as c:
        c.rejected([])
        c.failed("x")
    memory = tracing_batch.ContextMemory()
    memory.remember("r", Rec(0))
    assert len(memory) == 0


async def test_batch_round_trip_through_the_runner_and_outbox(
    spans: InMemorySpanExporter,
) -> None:
    """Record 0 arrives with an upstream traceparent, record 1 without, record 2 is
    dead-lettered: each output carries its own record's grade span, the DLQ letter too."""
    prod = HeaderProducer()
    r = BatchRunner("grader", Health(), base_backoff_s=0.0)
    r.producer = prod  # type: ignore[assignment]
    recs = (Rec(0, headers=[("traceparent", UPSTREAM.encode())]), Rec(1), Rec(2))
    lines: list[dict[str, Any]] = []

    async def handle(batch: Any) -> list[Rejected]:
        rec = logging.LogRecord("x", logging.INFO, __file__, 1, "in batch", (), None)
        lines.append(json.loads(JsonFormatter().format(rec)))
        box = r.outbox()
        for rec_ in batch[:2]:
            await box.add("out", b"k", f"out{rec_.offset}".encode(), parent=rec_)
        assert not await box.flush()
        err = ParseError("bad")
        return [Rejected(batch[2], disposition(err), err)]

    await r.run(Msg(recs), handle)

    got = by_name(spans)
    [batch] = got["grader batch"]
    grade = {s.attributes["messaging.kafka.offset"]: s for s in got["grade"]}
    assert sorted(grade) == [0, 1, 2]
    # record 0 continues the upstream trace; record 1 starts a new one
    assert grade[0].context.trace_id == UPSTREAM_TRACE
    assert grade[0].parent is not None and grade[0].parent.span_id == UPSTREAM_SPAN
    assert grade[1].parent is None and grade[1].context.trace_id != UPSTREAM_TRACE
    # the batch span is a root of its own, linked to the upstream context; each record
    # span links back to it
    assert batch.parent is None
    assert [lk.context.span_id for lk in batch.links] == [UPSTREAM_SPAN]
    assert all(s.links[0].context.span_id == batch.context.span_id for s in grade.values())
    # outputs carry their own record's span
    for off in (0, 1):
        tid, sid = parse(prod.headers_of(f"out{off}".encode())["traceparent"])
        assert (tid, sid) == (grade[off].context.trace_id, grade[off].context.span_id)
    dlq = next(h for v, h in prod.records if b'"offset":2' in v.replace(b" ", b""))
    tid, sid = parse(dict(dlq)["traceparent"])
    assert (tid, sid) == (grade[2].context.trace_id, grade[2].context.span_id)
    assert grade[2].status.status_code is StatusCode.ERROR
    assert grade[2].attributes["rlstream.dead_letter"] == "parse_error"
    assert grade[0].status.status_code is StatusCode.UNSET
    # log lines inside the handler carry the batch span's ids
    assert lines[0]["trace_id"] == f"{batch.context.trace_id:032x}"
    assert lines[0]["span_id"] == f"{batch.context.span_id:016x}"


async def test_failed_batch_marks_its_spans(spans: InMemorySpanExporter) -> None:
    from rlstream.delivery import RetryBatch
    from rlstream.errors import TransientError

    r = BatchRunner("ingest", Health(), base_backoff_s=0.0)
    r.producer = Producer()  # type: ignore[assignment]

    async def handle(batch: Any) -> list[Rejected]:
        raise RetryBatch(TransientError("pg down"), "transient")

    msg = Msg((Rec(0),))
    await r.run(msg, handle)
    got = by_name(spans)
    assert msg.nacked == 1
    assert got["ingest"][0].status.status_code is StatusCode.ERROR
    assert "transient" in (got["ingest batch"][0].status.description or "")


async def test_existing_traceparent_is_kept(spans: InMemorySpanExporter) -> None:
    """A replayed record keeps the traceparent it was first sent with."""
    with tracing.span("outer"):
        out = tracing.inject([("traceparent", UPSTREAM.encode())])
    assert out == [("traceparent", UPSTREAM.encode())]


async def test_child_environment_round_trip(spans: InMemorySpanExporter) -> None:
    with tracing.span("launch") as launch:
        env = tracing.env_for_child()
    assert set(env) == {"TRACEPARENT"}
    parent = tracing.context_from_env(env)
    with tracing.span("train", parent=parent) as train:
        pass
    assert train.context.trace_id == launch.context.trace_id
    assert train.parent.span_id == launch.context.span_id
    assert tracing.context_from_env({}) is None


async def test_span_links_and_activate(spans: InMemorySpanExporter) -> None:
    recs = [Rec(0), Rec(1)]
    memory = tracing_batch.ContextMemory(max_entries=3)
    with tracing_batch.consume("curator", recs):
        memory.remember("r0", recs[0])
        memory.remember("r1", recs[1])
        with tracing.activate(recs[1]), tracing.span("inner") as inner:
            pass
    curate = {s.attributes["messaging.kafka.offset"]: s for s in by_name(spans)["curate"]}
    assert inner.parent.span_id == curate[1].context.span_id
    parent, links = memory.parent_and_links(["r0", "r1", "unknown"])
    assert parent.span_id == curate[1].context.span_id  # the newest
    assert [c.span_id for c in links] == [curate[1].context.span_id, curate[0].context.span_id]
    with tracing.span("release", parent=parent, links=links) as release:
        pass
    assert release.context.trace_id == curate[1].context.trace_id
    assert len(release.links) == 2
    with tracing_batch.consume("curator", recs):  # bounded: the oldest entries go
        for k in ("a", "b", "c", "d"):
            memory.remember(k, recs[0])
    assert len(memory) == 3 and memory.parent_and_links(["r0", "r1"]) == (None, [])


async def test_exception_in_span_marks_it_failed(spans: InMemorySpanExporter) -> None:
    with pytest.raises(ValueError), tracing.span("evaluate"):
        raise ValueError("boom")
    [s] = spans.get_finished_spans()
    assert s.status.status_code is StatusCode.ERROR and s.events[0].name == "exception"


def test_settings_and_console_exporter(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setenv("RLSTREAM_TRACING", "console")
    settings = Settings()
    assert tracing.configure_tracing("grader", settings)
    try:
        with tracing.span("grade"):
            pass
    finally:
        tracing.shutdown()
    line = json.loads(capsys.readouterr().err.strip().splitlines()[-1])
    assert line["name"] == "grade"
    assert line["resource"]["attributes"]["service.name"] == "rlstream-grader"
    monkeypatch.setenv("RLSTREAM_TRACING", "zipkin")
    with pytest.raises(ValueError):
        Settings()
    monkeypatch.delenv("RLSTREAM_TRACING")
    assert Settings().tracing == "off" and not tracing.configure_tracing("x", Settings())


def test_otlp_endpoint_setting(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("RLSTREAM_TRACING", "otlp")
    monkeypatch.setenv("RLSTREAM_OTLP_ENDPOINT", "http://collector:4318/")
    assert tracing.configure_tracing("ingest", Settings())
    try:
        state = tracing._STATE
        assert state is not None
        proc = state.provider._active_span_processor._span_processors[0]
        exporter = getattr(proc, "span_exporter", None) or proc._batch_processor._exporter
        assert exporter._endpoint == "http://collector:4318/v1/traces"
    finally:
        tracing.shutdown()


def test_packages_absent_leaves_tracing_off(
    monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    monkeypatch.setitem(sys.modules, "opentelemetry.sdk.trace", None)
    monkeypatch.setenv("RLSTREAM_TRACING", "otlp")
    with caplog.at_level(logging.WARNING, "rlstream.tracing"):
        assert not tracing.configure_tracing("ingest", Settings())
    assert not tracing.active()
    assert "not installed" in caplog.text
