"""Real-broker smoke tests: groups and committed offsets, FastStream, idempotence, transactions."""

from __future__ import annotations

import asyncio
import uuid
from typing import Any

import pytest
from aiokafka import AIOKafkaConsumer, AIOKafkaProducer, TopicPartition

pytestmark = [pytest.mark.kafka, pytest.mark.harness]


def _name(prefix: str) -> str:
    return f"{prefix}-{uuid.uuid4().hex[:8]}"


async def _drain(consumer: AIOKafkaConsumer, want: int, timeout: float = 30.0) -> list[Any]:
    got: list[Any] = []
    loop = asyncio.get_running_loop()
    end = loop.time() + timeout
    while len(got) < want and loop.time() < end:
        batch = await consumer.getmany(timeout_ms=500)
        for msgs in batch.values():
            got.extend(msgs)
    return got


async def test_group_commit_and_resume(kafka: Any) -> None:
    topic, group = _name("smoke-offsets"), _name("g")
    kafka.create_topics([topic], partitions=1)
    producer = AIOKafkaProducer(bootstrap_servers=kafka.bootstrap)
    await producer.start()
    try:
        for i in range(10):
            await producer.send_and_wait(topic, f"m{i}".encode(), key=b"k")
    finally:
        await producer.stop()

    tp = TopicPartition(topic, 0)
    c1 = AIOKafkaConsumer(
        topic,
        bootstrap_servers=kafka.bootstrap,
        group_id=group,
        auto_offset_reset="earliest",
        enable_auto_commit=False,
    )
    await c1.start()
    try:
        first = await _drain(c1, 6)
        assert [m.value for m in first[:6]] == [f"m{i}".encode() for i in range(6)]
        await c1.commit({tp: first[5].offset + 1})
        assert await c1.committed(tp) == 6
    finally:
        await c1.stop()

    # A new member of the same group resumes from the committed offset, not from 0.
    c2 = AIOKafkaConsumer(
        topic,
        bootstrap_servers=kafka.bootstrap,
        group_id=group,
        auto_offset_reset="earliest",
        enable_auto_commit=False,
    )
    await c2.start()
    try:
        rest = await _drain(c2, 4)
        assert [m.value for m in rest] == [f"m{i}".encode() for i in range(6, 10)]
    finally:
        await c2.stop()


async def test_faststream_app_on_real_broker(kafka: Any) -> None:
    from faststream.kafka import KafkaBroker

    topic = _name("smoke-faststream")
    kafka.create_topics([topic])
    broker = KafkaBroker(kafka.bootstrap)
    received: asyncio.Future[dict[str, Any]] = asyncio.get_running_loop().create_future()

    @broker.subscriber(topic, group_id=_name("fs"), auto_offset_reset="earliest")
    async def handle(body: dict[str, Any]) -> None:
        if not received.done():
            received.set_result(body)

    await broker.start()
    try:
        await broker.publish({"id": 7, "text": "hello"}, topic=topic)
        assert await asyncio.wait_for(received, 30) == {"id": 7, "text": "hello"}
    finally:
        await broker.stop()


async def test_idempotent_producer(kafka: Any) -> None:
    topic = _name("smoke-idem")
    kafka.create_topics([topic], partitions=1)
    producer = AIOKafkaProducer(
        bootstrap_servers=kafka.bootstrap, enable_idempotence=True, acks="all"
    )
    await producer.start()
    try:
        metas = [await producer.send_and_wait(topic, f"v{i}".encode()) for i in range(5)]
    finally:
        await producer.stop()
    assert [m.offset for m in metas] == [0, 1, 2, 3, 4]
    consumer = AIOKafkaConsumer(
        topic, bootstrap_servers=kafka.bootstrap, auto_offset_reset="earliest"
    )
    await consumer.start()
    try:
        got = await _drain(consumer, 5)
    finally:
        await consumer.stop()
    assert [m.value for m in got] == [f"v{i}".encode() for i in range(5)]


async def test_transactions_commit_visible_abort_invisible(kafka: Any) -> None:
    topic = _name("smoke-tx")
    kafka.create_topics([topic], partitions=1)
    producer = AIOKafkaProducer(bootstrap_servers=kafka.bootstrap, transactional_id=_name("tx"))
    await producer.start()
    try:
        async with producer.transaction():
            await producer.send_and_wait(topic, b"committed-1")
            await producer.send_and_wait(topic, b"committed-2")
        await producer.begin_transaction()
        await producer.send_and_wait(topic, b"aborted")
        await producer.abort_transaction()
        async with producer.transaction():
            await producer.send_and_wait(topic, b"committed-3")
    finally:
        await producer.stop()

    async def read(isolation: str, want: int) -> list[bytes]:
        c = AIOKafkaConsumer(
            topic,
            bootstrap_servers=kafka.bootstrap,
            auto_offset_reset="earliest",
            isolation_level=isolation,
        )
        await c.start()
        try:
            return [m.value for m in await _drain(c, want, timeout=15)]
        finally:
            await c.stop()

    assert await read("read_committed", 3) == [b"committed-1", b"committed-2", b"committed-3"]
    # read_uncommitted sees the aborted record too: proof the abort really wrote something.
    assert b"aborted" in await read("read_uncommitted", 4)


async def test_restart_keeps_data(kafka: Any) -> None:
    topic = _name("smoke-restart")
    kafka.create_topics([topic], partitions=1)
    producer = AIOKafkaProducer(bootstrap_servers=kafka.bootstrap)
    await producer.start()
    try:
        await producer.send_and_wait(topic, b"before-restart")
    finally:
        await producer.stop()
    bootstrap = kafka.bootstrap
    await asyncio.to_thread(kafka.restart)
    assert kafka.bootstrap == bootstrap
    consumer = AIOKafkaConsumer(
        topic, bootstrap_servers=kafka.bootstrap, auto_offset_reset="earliest"
    )
    await consumer.start()
    try:
        got = await _drain(consumer, 1)
    finally:
        await consumer.stop()
    assert [m.value for m in got] == [b"before-restart"]
