"""Property (issue 24): every hostile raw record is scored or dead-lettered with a reason,
within a time bound, and the consumer commits past it.

In process, for breadth: the real ingest and grader handlers behind the real batch runner,
over an in-memory store and a producer that records what it would publish. The same
strategies run against the real broker in tests/integration/services/test_no_stall.py.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import sys
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from types import SimpleNamespace
from typing import Any

import pytest
from hypothesis import HealthCheck, event, given, settings
from hypothesis import strategies as st

from fakes.kafka import Producer
from rlstream.assembly import Assembler
from rlstream.assembly.memory import MemoryTurnStore
from rlstream.delivery import BatchRunner
from rlstream.events import topics
from rlstream.grading import RewardSpec, SpecResolver
from rlstream.ingest import Ingestor
from rlstream.observability import Health
from rlstream.services.grader.handler import GraderHandler
from rlstream.services.ingest.handler import IngestHandler
from rlstream.settings import Settings
from rlstream_testkit.hostile import headers, hostile_records

pytestmark = pytest.mark.unit

#: seconds one record may take through ingest and grading on a loaded 2-core machine
TIME_BOUND_S = 20.0


@dataclass
class Rec:
    value: bytes | None
    headers: list[tuple[str, bytes]] = field(default_factory=list)
    topic: str = topics.CONVERSATIONS_RAW
    partition: int = 0
    offset: int = 0
    timestamp: int = 0
    key: bytes | None = b"k"


class Msg:
    def __init__(self, rec: Rec) -> None:
        self.raw_message = (rec,)
        self.acked = 0

    async def ack(self) -> None:
        self.acked += 1

    async def nack(self) -> None:
        pass


class Store:
    def __init__(self) -> None:
        self.transcripts: dict[str, Any] = {}
        self.rollouts: list[Any] = []

    async def save_transcripts(self, ts: list[Any]) -> set[str]:
        new = {t.conversation_id for t in ts if t.conversation_id not in self.transcripts}
        for t in ts:
            self.transcripts.setdefault(t.conversation_id, t)
        return new

    async def get_transcripts(self, ids: list[str]) -> dict[str, Any]:
        return {i: self.transcripts[i] for i in ids if i in self.transcripts}

    async def save_rollouts(self, rs: list[Any]) -> list[str]:
        self.rollouts += rs
        return [r.rollout_id for r in rs]

    async def erased_among(self, ids: list[str]) -> set[str]:
        return set()


def runtime(service: str, producer: Any) -> Any:
    runner = BatchRunner(service, Health(), base_backoff_s=0.0)
    runner.producer = producer
    return SimpleNamespace(
        service=service,
        settings=Settings(),
        runner=runner,
        store=Store(),
        redis=None,
        topic=lambda name: name,
    )


async def through(rt: Any, handle: Any, rec: Rec) -> None:
    """Run one record until the runner commits it (a bug may take BUG_ATTEMPTS tries)."""
    msg = Msg(rec)
    for _ in range(3):
        await rt.runner.run(msg, handle)
        if msg.acked:
            return
    raise AssertionError(f"never committed past the record: {rt.runner.health.reason}")


def outcome(sent: list[tuple[str, bytes | None, bytes]], out_topic: str, dlq: str) -> str:
    published = [t for t, _, _ in sent]
    assert len(published) == 1, f"expected one output, got {published}"
    if published[0] == dlq:
        letter = json.loads(sent[0][2])
        assert letter["error_code"] and letter["error_message"], letter
        return "dlq:" + letter["error_code"]
    assert published[0] == out_topic
    return "ok"


@contextlib.contextmanager
def production_stack() -> Iterator[None]:
    """Python's default recursion limit, as in a service process (hypothesis raises it
    while a test runs, which hid the RecursionError this test exists for)."""
    before = sys.getrecursionlimit()
    sys.setrecursionlimit(1000)
    try:
        yield
    finally:
        sys.setrecursionlimit(before)


def one(value: bytes | None, hdrs: list[tuple[str, bytes]]) -> str:
    with production_stack():
        return _one(value, hdrs)


def _one(value: bytes | None, hdrs: list[tuple[str, bytes]]) -> str:
    ingest_prod, grader_prod = Producer(), Producer()
    irt, grt = runtime("ingest", ingest_prod), runtime("grader", grader_prod)
    ingest = IngestHandler(irt, Ingestor(), Assembler(MemoryTurnStore()))
    grader = GraderHandler(grt, SpecResolver(single=RewardSpec.parse("outcome")))
    started = time.perf_counter()
    asyncio.run(through(irt, ingest.handle, Rec(value, hdrs)))
    got = outcome(ingest_prod.sent, topics.TRANSCRIPTS, topics.dlq(topics.CONVERSATIONS_RAW))
    if got == "ok":
        transcript = ingest_prod.sent[0][2]
        rec = Rec(transcript, topic=topics.TRANSCRIPTS)
        asyncio.run(through(grt, grader.handle, rec))
        got = outcome(grader_prod.sent, topics.SCORED, topics.dlq(topics.TRANSCRIPTS))
    took = time.perf_counter() - started
    assert took < TIME_BOUND_S, f"{took:.1f}s for one record"
    return got


@settings(
    max_examples=150,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)
@given(value=hostile_records(), hdrs=headers)
def test_every_hostile_record_is_scored_or_dead_lettered_and_committed(
    value: bytes, hdrs: list[tuple[str, bytes]]
) -> None:
    event(one(value, hdrs))


@pytest.mark.parametrize("levels", [950, 1000, 1010, 1020, 1100, 5000])
def test_the_reported_depths_are_dead_lettered_as_too_deep(levels: int) -> None:
    from rlstream_testkit.hostile import base_record

    body = json.dumps(base_record("d")).encode()
    deep = b'{"a":' * levels + b'"x"' + b"}" * levels
    value = body.replace(b'{"channel": "chat"}', deep, 1)
    assert one(value, []) == "dlq:nesting_too_deep"


def test_an_empty_value_is_dead_lettered() -> None:
    assert one(None, []).startswith("dlq:")


@given(st.binary(max_size=64))
@settings(max_examples=30, deadline=None)
def test_arbitrary_bytes(value: bytes) -> None:
    one(value, [])
