"""The status collector with fake sources: lag and rates computed right, and every source
that fails becomes a marked "unavailable: reason" section, never an exception."""

from __future__ import annotations

import asyncio
import http.server
import os
import subprocess
import sys
import threading
from collections.abc import Iterator
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from typing import Any, ClassVar

import pytest
from rich.console import Console

from rlstream.errors import TransientError
from rlstream.settings import Settings
from rlstream.stackstatus.collect import StatusCollector
from rlstream.stackstatus.http_probe import parse_totals, probe_service
from rlstream.stackstatus.kafka_probe import TopicOffsets, _letter
from rlstream.stackstatus.model import DeadLetter, StatusSnapshot, TopicsSection, TopicStatus
from rlstream.stackstatus.render import render_snapshot
from rlstream.storage import EvaluationSummary, PoolCounts, RunSummary

pytestmark = pytest.mark.unit

P = "t1."
RAW, TRANS, SCORED = P + "rlstream.conversations.raw", P + "rlstream.transcripts.v1", P + "rlstream.scored.v1"  # fmt: skip
NOW = datetime(2026, 12, 2, 12, 0, tzinfo=UTC)


@dataclass
class Svc:
    pid: int | None
    health_url: str | None
    metrics_url: str | None = None


@dataclass
class FakeStack:
    services: dict[str, Svc] = field(default_factory=dict)
    kafka_bootstrap: str = "127.0.0.1:1"
    postgres_dsn: str | None = "postgresql://fake/db"
    redis_url: str | None = "redis://fake:1/0"
    topics: dict[str, str] = field(
        default_factory=lambda: {
            "raw": RAW, "transcripts": TRANS, "scored": SCORED, "raw_dlq": RAW + ".dlq"
        }
    )  # fmt: skip
    consumer_groups: dict[str, str] = field(
        default_factory=lambda: {"ingest": "t1.rlstream-ingest", "grader": "t1.rlstream-grader"}
    )
    state: str = "ready"


class FakeKafka:
    def __init__(self, scored_end: int = 40, fail: Exception | None = None) -> None:
        self.fail = fail
        self.closed = 0
        self.ends = {
            RAW: {0: 10, 1: 5},
            TRANS: {0: 8, 1: 7},
            SCORED: {0: scored_end},
            RAW + ".dlq": {0: 2},
        }

    async def offsets(self, names: Any) -> dict[str, TopicOffsets]:
        if self.fail:
            raise self.fail
        return {n: TopicOffsets({p: 0 for p in e}, dict(e)) for n, e in self.ends.items()
                if n in list(names)}  # fmt: skip

    async def committed(self, group: str) -> dict[tuple[str, int], int]:
        if group.endswith("ingest"):
            return {(RAW, 0): 10, (RAW, 1): 5}
        return {(TRANS, 0): 6}  # partition 1 never committed: all 7 records are to do

    async def dead_letters(self, offsets: dict[str, TopicOffsets], n: int) -> list[DeadLetter]:
        assert list(offsets) == [RAW + ".dlq"]
        return [DeadLetter(at=RAW + ".dlq/0/1", source=RAW + "/1/3", failed_at=NOW,
                           service="ingest", code="unparseable", reason="ValueError: bad")]  # fmt: skip

    async def close(self) -> None:
        self.closed += 1


class FakeStore:
    def __init__(self, fail: Exception | None = None) -> None:
        self.fail = fail

    async def pool_counts(self) -> PoolCounts:
        if self.fail:
            raise self.fail
        return PoolCounts(groups_pending=3, groups_released=2, rollouts_pending=11,
                          rollouts_released=9, datasets=1)  # fmt: skip

    async def recent_runs(self, limit: int) -> tuple[dict[str, int], list[RunSummary]]:
        run = RunSummary(run_id="run-1", agent="a", backend="builtin", method="sft",
                         status="running", dataset_id="d", updated_at=NOW)  # fmt: skip
        return {"running": 1}, [run]

    async def recent_evaluations(self, limit: int) -> tuple[dict[str, int], list[EvaluationSummary]]:  # fmt: skip
        ev = EvaluationSummary(evaluation_id="e1", run_id="run-0", agent="a",
                               candidate_model="m", decision="promote", created_at=NOW)  # fmt: skip
        return {"promote": 1}, [ev]

    async def close(self) -> None:
        pass


class FakeRedis:
    def __init__(self, ok: bool = True) -> None:
        self.ok = ok

    async def ping(self) -> bool:
        if not self.ok:
            raise ConnectionError("Connection refused")
        return True

    async def aclose(self) -> None:
        pass


class _Handler(http.server.BaseHTTPRequestHandler):
    routes: ClassVar[dict[str, tuple[int, str]]] = {}

    def do_GET(self) -> None:
        code, body = self.routes.get(self.path, (404, "not found\n"))
        data = body.encode()
        self.send_response(code)
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def log_message(self, *args: Any) -> None:
        pass


METRICS = (
    "# TYPE rlstream_messages_consumed_total counter\n"
    'rlstream_messages_consumed_total{service="grader",topic="a"} 12.0\n'
    'rlstream_messages_consumed_total{service="grader",topic="b"} 3.0\n'
    "# TYPE rlstream_messages_dead_lettered_total counter\n"
    'rlstream_messages_dead_lettered_total{service="grader",topic="a",reason="x"} 2.0\n'
)


@pytest.fixture
def health() -> Iterator[str]:
    routes = {"/healthz": (200, "ok\n"), "/readyz": (503, "kafka: broker unreachable\n"),
              "/metrics": (200, METRICS)}  # fmt: skip
    handler = type("H", (_Handler,), {"routes": routes})
    srv = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    threading.Thread(target=srv.serve_forever, daemon=True).start()
    yield f"http://127.0.0.1:{srv.server_address[1]}"
    srv.shutdown()
    srv.server_close()


def _collector(stack: FakeStack, kafka: Any, store: Any, redis: Any) -> StatusCollector:
    c = StatusCollector(stack, Settings(), timeout_s=2)  # type: ignore[arg-type]
    c.kafka, c._store, c._redis = kafka, store, redis
    return c


def test_lag_counts_uncommitted_partitions_from_their_start_and_rates_follow_the_broker() -> None:
    stack = FakeStack()
    c = _collector(stack, FakeKafka(scored_end=40), FakeStore(), FakeRedis())
    before = StatusSnapshot(
        taken_at=datetime.now(UTC) - timedelta(seconds=2),
        scored_total=20,
        topics=TopicsSection(items=(TopicStatus(key="scored", name=SCORED, produced=20),)),
    )
    snap = asyncio.run(c.collect(before))
    by = {t.name: t for t in snap.topics.items}
    raw, trans = by[RAW].consumers[0], by[TRANS].consumers[0]
    assert (raw.service, raw.consumed, raw.lag) == ("ingest", 15, 0)
    assert (trans.service, trans.consumed, trans.lag) == ("grader", 6, 2 + 7)
    assert by[SCORED].consumers == () and by[SCORED].produced == 40
    assert by[RAW + ".dlq"].dead_letter and by[RAW + ".dlq"].produced == 2
    # 20 more scored rollouts in ~2 s
    assert snap.scored_total == 40
    assert snap.scored_per_s is not None and 9.0 < snap.scored_per_s < 10.5
    assert by[SCORED].produced_per_s is not None and 9.0 < by[SCORED].produced_per_s < 10.5
    assert snap.pool.counts is not None and snap.pool.counts.groups_pending == 3
    assert (
        snap.runs.by_status == {"running": 1} and snap.evaluations.recent[0].decision == "promote"
    )
    assert snap.dead_letters.total == 2 and snap.dead_letters.recent[0].code == "unparseable"
    servers = {s.name: s.state for s in snap.services}
    assert servers == {"kafka": "up", "postgres": "up", "redis": "up"}
    assert snap.problems() == []
    console = Console(record=True, width=120)
    console.print(render_snapshot(snap))
    lines = console.export_text().splitlines()
    trans_row = next(line for line in lines if line.startswith(TRANS + " "))
    assert trans_row.split() == [TRANS, "2", "15", "-", "grader", "6", "9"]
    assert any("Training runs (running 1)" in line for line in lines)
    assert any("Evaluations (promote 1)" in line for line in lines)
    assert any(line.startswith("Dead letters (2 in all") for line in lines)
    assert any("unparseable" in line and "ValueError: bad" in line for line in lines)


def test_every_failing_source_is_marked_unavailable_never_raised() -> None:
    kafka = FakeKafka(fail=TransientError("kafka: broker unreachable at 127.0.0.1:1"))
    stack = FakeStack(services={"ingest": Svc(pid=None, health_url="http://127.0.0.1:9")})
    c = _collector(stack, kafka, FakeStore(fail=OSError("connection refused")), FakeRedis(False))
    snap = asyncio.run(c.collect())
    assert snap.topics.unavailable == "kafka: broker unreachable at 127.0.0.1:1"
    assert snap.dead_letters.unavailable == snap.topics.unavailable
    assert snap.pool.unavailable == "OSError: connection refused"
    assert snap.runs.unavailable == snap.evaluations.unavailable == snap.pool.unavailable
    assert kafka.closed == 1 and c._store is None  # reconnect on the next snapshot
    states = {s.name: (s.state, s.reason) for s in snap.services}
    assert states["kafka"][0] == states["postgres"][0] == states["redis"][0] == "unreachable"
    assert "cannot reach redis" in (states["redis"][1] or "")
    assert states["ingest"][0] == "unknown" and "health endpoint" in (states["ingest"][1] or "")
    assert snap.scored_total is None and snap.scored_per_s is None
    assert len(snap.problems()) == 9
    console = Console(record=True, width=120)
    console.print(render_snapshot(snap))
    text = console.export_text()
    assert "unavailable: kafka: broker unreachable" in text
    assert "unavailable: OSError: connection refused" in text


def test_service_probe_reads_readiness_reason_and_metric_totals(health: str) -> None:
    st = asyncio.run(probe_service("grader", Svc(os.getpid(), health, health + "/metrics")))
    assert (st.alive, st.healthy, st.ready, st.state) == (True, True, False, "not ready")
    assert st.reason == "kafka: broker unreachable"
    assert (st.consumed, st.dead_lettered, st.published) == (15.0, 2.0, None)


def test_service_probe_reports_an_exited_process_as_down() -> None:
    proc = subprocess.run([sys.executable, "-c", "import os; print(os.getpid())"],
                          capture_output=True, text=True, check=True)  # fmt: skip
    st = asyncio.run(probe_service("ingest", Svc(int(proc.stdout), "http://127.0.0.1:9")))
    assert (st.state, st.reason) == ("down", "process exited")


def test_metric_totals_ignore_other_families() -> None:
    assert parse_totals(METRICS + "# TYPE other_total counter\nother_total 5\n") == {
        "consumed": 15.0, "dead_lettered": 2.0
    }  # fmt: skip


@dataclass
class Rec:
    topic: str
    partition: int
    offset: int
    value: bytes | None


def test_a_dead_letter_keeps_its_reason_and_source_and_a_stray_record_is_marked() -> None:
    from rlstream.events.models import DLQRecord

    e = DLQRecord(topic=RAW, partition=1, offset=3, value_b64="", error_code="bad_json",
                  error_class="ValueError", error_message="not JSON", service="ingest")  # fmt: skip
    d = _letter(Rec(RAW + ".dlq", 0, 7, e.dump_json()))
    assert (d.at, d.source, d.code, d.reason) == (
        RAW + ".dlq/0/7", RAW + "/1/3", "bad_json", "ValueError: not JSON"
    )  # fmt: skip
    stray = _letter(Rec(RAW + ".dlq", 0, 8, b"{"))
    assert stray.code == "?" and "not a dead letter" in stray.reason
