"""Publishing a batch's outputs: enqueue everything, then wait for every broker ack.

Offsets are committed only after :meth:`Outbox.flush` returns, so an output is on the
broker (acks=all, idempotent producer) before its input is marked consumed. A record the
broker refuses for good (too large) is reported per item so it can be dead-lettered.
"""

from __future__ import annotations

import asyncio
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any, Generic, TypeVar

from aiokafka import AIOKafkaProducer

from rlstream.observability.metrics import PUBLISHED

R = TypeVar("R")

Headers = Sequence[tuple[str, bytes]]


def make_producer(bootstrap: str, client_id: str, max_request_size: int) -> AIOKafkaProducer:
    """An idempotent, acks=all producer tuned for batches (why: no duplicates on retry)."""
    return AIOKafkaProducer(
        bootstrap_servers=bootstrap,
        client_id=client_id,
        acks="all",
        enable_idempotence=True,
        linger_ms=5,
        max_batch_size=512 * 1024,
        max_request_size=max_request_size,
        request_timeout_ms=30_000,
    )


@dataclass(slots=True)
class Outbox(Generic[R]):
    producer: AIOKafkaProducer
    service: str
    _pending: list[tuple[R | None, str, asyncio.Future[Any]]] = field(default_factory=list)

    async def add(
        self,
        topic: str,
        key: bytes | None,
        value: bytes,
        headers: Headers = (),
        ref: R | None = None,
    ) -> None:
        try:
            fut = await self.producer.send(topic, value=value, key=key, headers=list(headers))
        except Exception as exc:  # refused before enqueueing (e.g. too large)
            failed: asyncio.Future[Any] = asyncio.get_running_loop().create_future()
            failed.set_exception(exc)
            fut = failed
        self._pending.append((ref, topic, fut))

    async def flush(self) -> list[tuple[R | None, BaseException]]:
        """Wait for all sends; return (ref, error) for each one that failed."""
        pending, self._pending = self._pending, []
        results = await asyncio.gather(*(f for _, _, f in pending), return_exceptions=True)
        failures: list[tuple[R | None, BaseException]] = []
        counts: dict[str, int] = {}
        for (ref, topic, _), res in zip(pending, results, strict=True):
            if isinstance(res, BaseException):
                failures.append((ref, res))
            else:
                counts[topic] = counts.get(topic, 0) + 1
        for topic, n in counts.items():
            PUBLISHED.labels(self.service, topic).inc(n)
        return failures
