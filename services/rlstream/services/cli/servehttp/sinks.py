"""Where served conversations go: a JSONL file, or the raw topic ``rlstream ingest`` reads.

Each line / record is a canonical transcript (``rlstream.serving.record``). A failed write
never fails the client's request: it is counted in ``rlstream_serve_logged_total`` with
``result="failed"`` and logged, so an alert can catch a sink that stopped working.
"""

from __future__ import annotations

import asyncio
import logging
from pathlib import Path
from typing import Any, Protocol

import orjson

from rlstream.settings import Settings

log = logging.getLogger("rlstream.serve")


class Sink(Protocol):
    name: str

    async def start(self) -> None: ...

    async def write(self, record: dict[str, Any]) -> None: ...

    async def stop(self) -> None: ...


class JsonlSink:
    """Appends one record per line; a lock keeps concurrent writes whole."""

    name = "jsonl"

    def __init__(self, path: Path) -> None:
        self.path = path
        self._lock = asyncio.Lock()

    async def start(self) -> None:
        self.path.parent.mkdir(parents=True, exist_ok=True)

    async def write(self, record: dict[str, Any]) -> None:
        line = orjson.dumps(record) + b"\n"
        async with self._lock:
            await asyncio.to_thread(self._append, line)

    def _append(self, line: bytes) -> None:
        with self.path.open("ab") as f:
            f.write(line)

    async def stop(self) -> None:
        return None


class KafkaSink:
    """Publishes to the raw topic, keyed by conversation id, acks=all."""

    name = "kafka"

    def __init__(self, settings: Settings, topic: str) -> None:
        self.settings, self.topic = settings, topic
        self.producer: Any = None

    async def start(self) -> None:
        from aiokafka import AIOKafkaProducer

        from rlstream.delivery.kafka_connect import start_or_explain
        from rlstream.delivery.kafka_security import client_kwargs

        self.producer = AIOKafkaProducer(
            bootstrap_servers=self.settings.kafka_bootstrap,
            acks="all",
            enable_idempotence=True,
            linger_ms=5,
            **client_kwargs(self.settings),
        )
        await start_or_explain(self.producer, self.settings)

    async def write(self, record: dict[str, Any]) -> None:
        key = str(record["conversation_id"]).encode()
        await self.producer.send_and_wait(self.topic, orjson.dumps(record), key=key)

    async def stop(self) -> None:
        if self.producer is not None:
            await self.producer.stop()
