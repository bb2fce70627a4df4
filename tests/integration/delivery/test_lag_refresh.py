"""On the real broker: the consumer lag gauge rises while the consumer gets no batch
(records produced, nothing polled), refreshed in the background by LagRefresher."""

from __future__ import annotations

import asyncio
import time
import uuid
from typing import Any

import pytest
from aiokafka import AIOKafkaConsumer, AIOKafkaProducer
from prometheus_client import REGISTRY

from rlstream.delivery.lag import LagRefresher

pytestmark = pytest.mark.kafka


def _lag(service: str, topic: str, part: int) -> float | None:
    return REGISTRY.get_sample_value(
        "rlstream_consumer_lag", {"service": service, "topic": topic, "partition": str(part)}
    )


async def _until(check: Any, timeout_s: float = 20.0) -> None:
    end = time.monotonic() + timeout_s
    while not check():
        assert time.monotonic() < end, "timed out"
        await asyncio.sleep(0.1)


async def test_lag_is_refreshed_on_an_idle_consumer(kafka: Any) -> None:
    topic = f"lag-{uuid.uuid4().hex[:8]}"
    kafka.create_topics([topic], partitions=2)
    prod = AIOKafkaProducer(bootstrap_servers=kafka.bootstrap)
    cons = AIOKafkaConsumer(
        topic,
        bootstrap_servers=kafka.bootstrap,
        group_id=f"g-{topic}",
        enable_auto_commit=False,
        auto_offset_reset="earliest",
    )
    await prod.start()
    await cons.start()
    lag = LagRefresher("lagtest", lambda: cons, interval_s=0.2)
    try:
        for i in range(3):
            await prod.send_and_wait(topic, b"%d" % i, partition=0)
        got = 0
        while got < 3:
            got += sum(len(v) for v in (await cons.getmany(timeout_ms=1000)).values())
        await cons.commit()
        lag.start()
        await _until(lambda: _lag("lagtest", topic, 0) == 0 and _lag("lagtest", topic, 1) == 0)

        # the consumer polls nothing from here on: no batch reaches the runner
        for i in range(4):
            await prod.send_and_wait(topic, b"x%d" % i, partition=0)
        for i in range(2):
            await prod.send_and_wait(topic, b"y%d" % i, partition=1)
        await _until(lambda: _lag("lagtest", topic, 0) == 4 and _lag("lagtest", topic, 1) == 2)
    finally:
        await lag.stop()
        await cons.stop()
        await prod.stop()
