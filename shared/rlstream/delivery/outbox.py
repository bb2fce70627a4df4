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

from rlstream.delivery.kafka_security import client_kwargs
from rlstream.delivery.sizing import FRAMING_BYTES
from rlstream.observability import tracing
from rlstream.observability.metrics import PUBLISHED
from rlstream.settings import Settings

R = TypeVar("R")

Headers = Sequence[tuple[str, bytes]]


def make_producer(
    settings: Settings, client_id: str, max_request_size: int, compression: str | None = None
) -> AIOKafkaProducer:
    """An idempotent, acks=all producer tuned for batches (why: no duplicates on retry),
    connecting to ``settings.kafka_bootstrap`` with the Kafka security settings."""
    return AIOKafkaProducer(
        bootstrap_servers=settings.kafka_bootstrap,
        **client_kwargs(settings),
        client_id=client_id,
        acks="all",
        enable_idempotence=True,
        linger_ms=5,
        max_batch_size=512 * 1024,
        max_request_size=max_request_size,
        request_timeout_ms=30_000,
        compression_type=compression,
    )


@dataclass(slots=True)
class _Out(Generic[R]):
    topic: str
    key: bytes | None
    value: bytes
    headers: list[tuple[str, bytes]]
    ref: R | None


@dataclass(slots=True)
class Outbox(Generic[R]):
    """Collects a batch's outputs, then sends them as per-partition record batches.

    ``producer.send`` per record spends its Python in partitioning and accumulator
    bookkeeping; building one ``BatchBuilder`` per partition costs a fraction of that
    (figures in bench/README.md). A
    batch the broker refuses for a reason tied to its records (e.g. too large) is re-sent
    record by record so that exactly the offending records are reported.
    """

    producer: AIOKafkaProducer
    service: str
    #: topic -> max.message.bytes (see :mod:`rlstream.delivery.sizing`); a record over its
    #: topic's limit fails here, per record, without reaching the broker
    limits: dict[str, int] = field(default_factory=dict)
    _pending: list[_Out[R]] = field(default_factory=list)
    _parts: dict[str, tuple[list[int], list[int]]] = field(default_factory=dict)

    async def add(
        self,
        topic: str,
        key: bytes | None,
        value: bytes,
        headers: Headers = (),
        ref: R | None = None,
        parent: Any = None,
    ) -> None:
        """Queue one record. With tracing on it gets the ``traceparent`` of ``parent``'s
        span (the input record it came from; default: ``ref.record`` when ``ref`` is an
        :class:`~rlstream.delivery.batch.Item` or a dead letter), else the current span's."""
        if parent is None:
            parent = getattr(ref, "record", None)
        self._pending.append(_Out(topic, key, value, tracing.inject(headers, parent), ref))

    async def flush(self) -> list[tuple[R | None, BaseException]]:
        """Send everything added; return (ref, error) for each record that failed."""
        pending, self._pending = self._pending, []
        oversized: list[tuple[R | None, BaseException]] = []
        if self.limits:
            pending, oversized = self._within_limits(pending)
        if not pending:
            return oversized
        prod = self.producer
        by_part: dict[tuple[str, int], list[_Out[R]]] = {}
        for topic in {o.topic for o in pending}:
            await prod.partitions_for(topic)  # metadata for the partitioner
        for o in pending:
            by_part.setdefault((o.topic, self._partition(o.topic, o.key)), []).append(o)
        sent: list[tuple[list[_Out[R]], asyncio.Future[Any]]] = []
        for (topic, part), outs in by_part.items():
            batch = prod.create_batch()
            chunk: list[_Out[R]] = []
            for o in outs:
                if (
                    batch.append(key=o.key, value=o.value, timestamp=None, headers=o.headers)
                    is None
                ):
                    sent.append((chunk, await prod.send_batch(batch, topic, partition=part)))
                    batch, chunk = prod.create_batch(), []
                    batch.append(key=o.key, value=o.value, timestamp=None, headers=o.headers)
                chunk.append(o)
            if chunk:
                sent.append((chunk, await prod.send_batch(batch, topic, partition=part)))
        results = await asyncio.gather(*(f for _, f in sent), return_exceptions=True)
        failures: list[tuple[R | None, BaseException]] = []
        counts: dict[str, int] = {}
        for (chunk, _), res in zip(sent, results, strict=True):
            if not isinstance(res, BaseException):
                counts[chunk[0].topic] = counts.get(chunk[0].topic, 0) + len(chunk)
            elif len(chunk) == 1 or _transient(res):
                failures += [(o.ref, res) for o in chunk]
            else:
                failures += await self._one_by_one(chunk, counts)
        for topic, n in counts.items():
            PUBLISHED.labels(self.service, topic).inc(n)
        return oversized + failures

    def _within_limits(
        self, pending: list[_Out[R]]
    ) -> tuple[list[_Out[R]], list[tuple[R | None, BaseException]]]:
        from aiokafka.errors import RecordTooLargeError

        ok: list[_Out[R]] = []
        bad: list[tuple[R | None, BaseException]] = []
        for o in pending:
            limit = self.limits.get(o.topic)
            size = len(o.value) + len(o.key or b"") + sum(len(k) + len(v) for k, v in o.headers)
            if limit is not None and size + FRAMING_BYTES > limit:
                err = RecordTooLargeError(f"{size} bytes > {o.topic} max.message.bytes {limit}")
                bad.append((o.ref, err))
            else:
                ok.append(o)
        return ok, bad

    def _partition(self, topic: str, key: bytes | None) -> int:
        """aiokafka's own partitioner, with the partition lists read once per topic and
        flush (``producer._partition`` copies both per record)."""
        parts = self._parts.get(topic)
        if parts is None:
            meta = self.producer._metadata
            all_p = list(meta.partitions_for_topic(topic))
            avail = list(meta.available_partitions_for_topic(topic))
            parts = self._parts[topic] = (all_p, avail)
        all_p, avail = parts
        partitioner = self.producer._partitioner
        return int(partitioner(key, all_p, avail))

    async def _one_by_one(
        self, chunk: list[_Out[R]], counts: dict[str, int]
    ) -> list[tuple[R | None, BaseException]]:
        failures: list[tuple[R | None, BaseException]] = []
        for o in chunk:
            try:
                fut = await self.producer.send(o.topic, o.value, o.key, headers=o.headers)
                await fut
                counts[o.topic] = counts.get(o.topic, 0) + 1
            except Exception as exc:
                failures.append((o.ref, exc))
        return failures


def _transient(exc: BaseException) -> bool:
    from rlstream.delivery.disposition import Action, disposition

    return disposition(exc).action is Action.RETRY
