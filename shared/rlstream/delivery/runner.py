"""The commit discipline every service shares, around a FastStream batch message.

Subscribers run with ``AckPolicy.MANUAL``. For each consumed batch this module: runs the
service's handler (which persists to Postgres and publishes its outputs), publishes the
batch's dead letters, and only then commits the offsets. If the handler raises
:class:`RetryBatch` (the world is down, not the record), it commits nothing, rewinds each
partition to the batch's first offset and backs off, so the same records come again.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Awaitable, Callable, Sequence
from typing import Any

from aiokafka import AIOKafkaProducer, TopicPartition

from rlstream.delivery.batch import Rejected
from rlstream.delivery.disposition import Action, RetryBatch, disposition
from rlstream.delivery.dlq import RecordLike, build_dlq_record, dlq_message
from rlstream.delivery.outbox import Outbox
from rlstream.observability.health import Health
from rlstream.observability.logs import bound
from rlstream.observability.metrics import (
    BATCH_SIZE,
    CONSUMED,
    CONSUMER_LAG,
    DEAD_LETTERED,
    HANDLER_SECONDS,
    RETRIES,
)

log = logging.getLogger("rlstream.delivery")

Handler = Callable[[Sequence[Any]], Awaitable[list[Rejected]]]


class BatchRunner:
    """Per-service ack/retry/DLQ driver. One instance per subscriber."""

    def __init__(
        self,
        service: str,
        health: Health,
        *,
        base_backoff_s: float = 0.2,
        max_backoff_s: float = 15.0,
    ) -> None:
        self.service = service
        self.health = health
        self.producer: AIOKafkaProducer | None = None
        self.base_backoff_s = base_backoff_s
        self.max_backoff_s = max_backoff_s
        self._failures = 0

    def outbox(self) -> Outbox[Any]:
        if self.producer is None:
            raise RuntimeError("BatchRunner.producer is not started")
        return Outbox(self.producer, self.service)

    async def dead_letter(self, rejected: list[Rejected]) -> None:
        """Publish DLQ records and wait for the broker; a failure here means retry."""
        if not rejected:
            return
        box = self.outbox()
        for rej in rejected:
            entry = build_dlq_record(rej.record, rej.verdict, rej.error, self.service)
            topic, key, value, headers = dlq_message(rej.record, entry)
            await box.add(topic, key, value, headers)
            DEAD_LETTERED.labels(self.service, rej.record.topic, rej.verdict.code).inc()
            with bound(
                correlation_id=f"{rej.record.topic}/{rej.record.partition}/{rej.record.offset}"
            ):
                log.warning(
                    "dead-lettered",
                    extra={"reason": rej.verdict.code, "error": rej.verdict.reason[:500]},
                )
        failures = await box.flush()
        if failures:
            raise RetryBatch(failures[0][1], "dlq_publish_failed")

    async def run(self, message: Any, handle: Handler) -> None:
        raw = message.raw_message
        records: tuple[RecordLike, ...] = raw if isinstance(raw, tuple) else (raw,)
        if not records:
            return
        started = time.perf_counter()
        per_topic: dict[str, int] = {}
        for r in records:
            per_topic[r.topic] = per_topic.get(r.topic, 0) + 1
        for topic, n in per_topic.items():
            CONSUMED.labels(self.service, topic).inc(n)
        BATCH_SIZE.labels(self.service).observe(len(records))
        first = records[0]
        try:
            with bound(
                correlation_id=f"{first.topic}/{first.partition}/{first.offset}+{len(records)}"
            ):
                rejected = await handle(records)
                await self.dead_letter(rejected)
        except Exception as exc:
            code = exc.code if isinstance(exc, RetryBatch) else disposition(exc).code
            if not isinstance(exc, RetryBatch) and disposition(exc).action is not Action.RETRY:
                log.exception("batch handler failed outside record isolation; retrying")
            await self._retry(message, exc, code)
            return
        try:
            await message.ack()  # commits the consumer's position: exactly this batch
        except Exception:  # rebalance in progress: the new owner redelivers (idempotent)
            log.warning("offset commit failed; records will be redelivered", exc_info=True)
        self._failures = 0
        if not self.health.ready:
            self.health.set_ready(True, "")
        HANDLER_SECONDS.labels(self.service).observe(time.perf_counter() - started)
        self._record_lag(message, records)

    async def _retry(self, message: Any, exc: BaseException, code: str) -> None:
        self._failures += 1
        RETRIES.labels(self.service, code).inc()
        if self._failures >= 3:
            self.health.set_ready(False, f"retrying: {code}")
        delay = min(self.max_backoff_s, self.base_backoff_s * 2 ** (self._failures - 1))
        log.warning(
            "batch will be retried",
            extra={
                "code": code,
                "error": repr(exc)[:500],
                "attempt": self._failures,
                "delay_s": delay,
            },
        )
        try:
            await message.nack()  # seek every partition back to the batch's first offset
        except Exception:
            log.warning("seek failed (partition revoked?)", exc_info=True)
        await asyncio.sleep(delay)

    def _record_lag(self, message: Any, records: Sequence[RecordLike]) -> None:
        consumer = getattr(message, "consumer", None)
        if consumer is None or not hasattr(consumer, "highwater"):
            return
        last: dict[tuple[str, int], int] = {}
        for r in records:
            last[(r.topic, r.partition)] = max(last.get((r.topic, r.partition), -1), r.offset)
        for (topic, part), off in last.items():
            try:
                hw = consumer.highwater(TopicPartition(topic, part))
            except Exception:
                continue
            if hw is not None:
                CONSUMER_LAG.labels(self.service, topic, str(part)).set(max(0, hw - off - 1))
