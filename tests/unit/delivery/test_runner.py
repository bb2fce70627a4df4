from __future__ import annotations

import asyncio
import json
from dataclasses import dataclass, field
from typing import Any

import pytest

from fakes.kafka import Batch, Producer
from rlstream.delivery import BatchRunner, Rejected, RetryBatch, disposition
from rlstream.errors import ParseError, TransientError
from rlstream.observability import Health

pytestmark = pytest.mark.unit


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
        self.acked = 0
        self.nacked = 0

    async def ack(self) -> None:
        self.acked += 1

    async def nack(self) -> None:
        self.nacked += 1


def runner(producer: Producer) -> BatchRunner:
    r = BatchRunner("svc", Health(), base_backoff_s=0.0)
    r.producer = producer  # type: ignore[assignment]
    return r


async def test_success_commits_after_dead_letters_are_published() -> None:
    prod = Producer()
    r = runner(prod)
    msg = Msg((Rec(0), Rec(1)))

    async def handle(recs: Any) -> list[Rejected]:
        err = ParseError("bad")
        return [Rejected(recs[1], disposition(err), err)]

    await r.run(msg, handle)
    assert (msg.acked, msg.nacked) == (1, 0)
    assert [t for t, _, _ in prod.sent] == ["in.dlq"]
    assert json.loads(prod.sent[0][2])["offset"] == 1
    assert r.health.ready


async def test_transient_failure_rewinds_and_commits_nothing() -> None:
    r = runner(Producer())
    msg = Msg((Rec(0),))

    async def handle(recs: Any) -> list[Rejected]:
        raise RetryBatch(TransientError("pg down"), "transient")

    for _ in range(3):
        await r.run(msg, handle)
    assert (msg.acked, msg.nacked) == (0, 3)
    assert not r.health.ready and "transient" in r.health.reason


async def test_unpublishable_dead_letter_is_retried_not_dropped() -> None:
    r = runner(Producer(fail=True))
    msg = Msg((Rec(0),))

    async def handle(recs: Any) -> list[Rejected]:
        err = ParseError("bad")
        return [Rejected(recs[0], disposition(err), err)]

    await r.run(msg, handle)
    assert (msg.acked, msg.nacked) == (0, 1)


async def test_health_endpoints() -> None:
    h = Health()
    port = await h.start("127.0.0.1", 0)
    try:

        async def get(path: str) -> bytes:
            reader, writer = await asyncio.open_connection("127.0.0.1", port)
            writer.write(f"GET {path} HTTP/1.1\r\nHost: x\r\n\r\n".encode())
            await writer.drain()
            data = await reader.read()
            writer.close()
            return data

        assert (await get("/healthz")).startswith(b"HTTP/1.1 200")
        assert (await get("/readyz")).startswith(b"HTTP/1.1 503")
        h.set_ready(True)
        assert (await get("/readyz")).startswith(b"HTTP/1.1 200")
        assert b"rlstream_messages_consumed_total" in await get("/metrics")
    finally:
        await h.stop()


class SequenceBroken(Producer):
    """A producer whose idempotence state broke: every send fails until it is replaced."""

    async def send_batch(self, batch: Batch, topic: str, *, partition: int) -> Any:
        from aiokafka.errors import OutOfOrderSequenceNumber

        fut: asyncio.Future[Any] = asyncio.get_running_loop().create_future()
        fut.set_exception(OutOfOrderSequenceNumber())
        return fut


async def test_a_producer_with_a_broken_sequence_is_replaced_then_the_batch_goes_through() -> None:
    r = runner(SequenceBroken())
    healthy = Producer()

    async def renew() -> None:
        r.producer = healthy  # type: ignore[assignment]

    r.renew_producer = renew
    msg = Msg((Rec(0),))

    async def handle(recs: Any) -> list[Rejected]:
        err = ParseError("bad")
        return [Rejected(recs[0], disposition(err), err)]

    await r.run(msg, handle)  # the dead letter fails: retried, and the producer replaced
    assert (msg.acked, msg.nacked) == (0, 1) and r.producer is healthy
    await r.run(msg, handle)
    assert (msg.acked, msg.nacked) == (1, 1) and [t for t, _, _ in healthy.sent] == ["in.dlq"]


async def test_outputs_over_the_topic_limit_fail_locally_per_record() -> None:
    prod = Producer()
    r = runner(prod)
    r.limits = {"out": 40_000}
    box = r.outbox()
    await box.add("out", b"a", b"x" * 100, ref="small")
    await box.add("out", b"b", b"x" * 50_000, ref="big")
    failures = await box.flush()
    assert [ref for ref, _ in failures] == ["big"]
    assert disposition(failures[0][1]).code == "message_too_large"
    assert [k for _, k, _ in prod.sent] == [b"a"]


async def test_a_batch_failing_with_a_bug_is_dead_lettered_not_retried_forever() -> None:
    prod = Producer()
    r = runner(prod)
    msg = Msg((Rec(0), Rec(1)))

    async def handle(recs: Any) -> list[Rejected]:
        raise ValueError("a bug that fails this batch every time")

    for _ in range(3):
        await r.run(msg, handle)
    assert (msg.acked, msg.nacked) == (1, 2)
    assert [json.loads(v)["error_code"] for _, _, v in prod.sent] == ["handler_error"] * 2
