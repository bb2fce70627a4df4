"""Enough of aiokafka's producer for the Outbox and the batch runner, in memory."""

from __future__ import annotations

import asyncio
from typing import Any


class Batch:
    def __init__(self) -> None:
        self.records: list[tuple[bytes | None, bytes]] = []

    def append(self, *, key: bytes | None, value: bytes, timestamp: Any, headers: Any) -> Any:
        self.records.append((key, value))
        return object()


class Producer:
    """Enough of AIOKafkaProducer for the Outbox: batches per partition, or one by one."""

    def __init__(self, fail: bool = False) -> None:
        self.sent: list[tuple[str, bytes | None, bytes]] = []
        self.fail = fail

    async def partitions_for(self, topic: str) -> set[int]:
        return {0}

    class _Meta:
        def partitions_for_topic(self, topic: str) -> set[int]:
            return {0}

        available_partitions_for_topic = partitions_for_topic

    _metadata = _Meta()

    def _partitioner(self, *args: Any) -> int:
        return 0

    def create_batch(self) -> Batch:
        return Batch()

    async def send_batch(self, batch: Batch, topic: str, *, partition: int) -> Any:
        fut: asyncio.Future[Any] = asyncio.get_running_loop().create_future()
        if self.fail:
            fut.set_exception(ConnectionError("broker gone"))
        else:
            self.sent += [(topic, k, v) for k, v in batch.records]
            fut.set_result(None)
        return fut

    async def send(self, topic: str, value: bytes, key: bytes | None, headers: Any) -> Any:
        fut: asyncio.Future[Any] = asyncio.get_running_loop().create_future()
        if self.fail:
            fut.set_exception(ConnectionError("broker gone"))
        else:
            self.sent.append((topic, key, value))
            fut.set_result(None)
        return fut


__all__ = ["Batch", "Producer"]
