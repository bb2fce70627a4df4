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
from rlstream.delivery.disposition import Action, Disposition, RetryBatch, disposition
from rlstream.delivery.dlq import DLQ_PAYLOAD_MAX, RecordLike, build_dlq_record, dlq_message
from rlstream.delivery.outbox import Outbox
from rlstream.delivery.progress import Progress
from rlstream.delivery.wire import unreadable_reason
from rlstream.events.models import DLQRecord
from rlstream.observability import tracing_batch
from rlstream.observability.health import Health
from rlstream.observability.logs import bound
from rlstream.observability.metrics import (
    BATCH_SIZE,
    CONSUMED,
    CONSUMER_LAG,
    DEAD_LETTERED,
    HANDLER_SECONDS,
    RETRIES,
    UNREADABLE,
)

log = logging.getLogger("rlstream.delivery")

Handler = Callable[[Sequence[Any]], Awaitable[list[Rejected]]]

#: times one batch may fail with a bug (not a transient error) before it is dead-lettered
BUG_ATTEMPTS = 3

#: errors after which an idempotent producer cannot send to the partition again until it
#: is replaced (its sequence numbers no longer match the broker's)
_PRODUCER_BROKEN = frozenset(
    {
        "OutOfOrderSequenceNumber",
        "OutOfOrderSequenceNumberError",
        "UnknownProducerIdError",
        "InvalidProducerEpochError",
        "ProducerFenced",
        "InvalidProducerIdMappingError",
        "DuplicateSequenceNumber",
    }
)


def producer_broken(exc: BaseException | None) -> bool:
    seen = 0
    while exc is not None and seen < 5:
        if {c.__name__ for c in type(exc).__mro__} & _PRODUCER_BROKEN:
            return True
        exc = getattr(exc, "cause", None) or exc.__cause__
        seen += 1
    return False


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
        #: replaces a producer whose idempotence state broke (set by the Runtime)
        self.renew_producer: Callable[[], Awaitable[None]] | None = None
        self.dlq_payload_max = DLQ_PAYLOAD_MAX
        #: topic -> max.message.bytes, read from the broker at startup
        self.limits: dict[str, int] = {}
        self.base_backoff_s = base_backoff_s
        self.max_backoff_s = max_backoff_s
        self.progress = Progress(service)
        self._failures = 0
        self._bug_attempts: dict[tuple[str, int, int], int] = {}

    def outbox(self) -> Outbox[Any]:
        if self.producer is None:
            raise RuntimeError("BatchRunner.producer is not started")
        return Outbox(self.producer, self.service, self.limits)

    async def dead_letter(self, rejected: list[Rejected]) -> None:
        """Publish DLQ records and wait for the broker; a failure here means retry.

        Building a letter never fails (:func:`build_dlq_record` degrades to a preview, then
        to the coordinates); "dead-lettered" is logged and counted only once the broker
        acknowledged the letter."""
        if not rejected:
            return
        box: Outbox[Rejected] = self.outbox()
        entries: dict[int, DLQRecord] = {}
        for rej in rejected:
            entry = build_dlq_record(
                rej.record, rej.verdict, rej.error, self.service, self.dlq_payload_max
            )
            entries[id(rej)] = entry
            topic, key, value, headers = dlq_message(rej.record, entry)
            await box.add(topic, key, value, headers, ref=rej, parent=rej.record)
        failures = await box.flush()
        # a dead letter the broker refuses for good (it cannot get smaller than its cap, so
        # only a misconfigured topic does this): send it once more without the payload,
        # which always fits, rather than retrying the batch forever
        refused = [(r, e) for r, e in failures if r is not None and _deterministic(e)]
        for rej, _ in refused:
            entry = build_dlq_record(rej.record, rej.verdict, rej.error, self.service, 0)
            entries[id(rej)] = entry
            topic, key, value, headers = dlq_message(rej.record, entry)
            await box.add(topic, key, value, headers, ref=rej, parent=rej.record)
        failures = [f for f in failures if f not in refused] + await box.flush()
        failed = {id(r) for r, _ in failures}
        for rej in rejected:
            if id(rej) not in failed:
                self._log_dead_letter(rej, entries[id(rej)])
        if failures:
            self.progress.dlq_failing = f"DLQ unpublishable: {failures[0][1]!r}"[:300]
            raise RetryBatch(failures[0][1], "dlq_publish_failed")
        self.progress.dlq_failing = None

    def _log_dead_letter(self, rej: Rejected, entry: DLQRecord) -> None:
        DEAD_LETTERED.labels(self.service, rej.record.topic, entry.error_code).inc()
        with bound(correlation_id=f"{rej.record.topic}/{rej.record.partition}/{rej.record.offset}"):
            log.warning(
                "dead-lettered",
                extra={"reason": entry.error_code, "error": entry.error_message[:500]},
            )

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
        self.progress.consumer = getattr(message, "consumer", None)
        self.progress.seen(records)
        readable, unreadable = split_unreadable(records)
        retry: tuple[BaseException, str] | None = None
        with tracing_batch.consume(self.service, readable) as traced:  # no-op when tracing is off
            try:
                with bound(
                    correlation_id=f"{first.topic}/{first.partition}/{first.offset}+{len(records)}"
                ):
                    rejected = await handle(readable) if readable else []
                    for u in unreadable:
                        UNREADABLE.labels(self.service, u.record.topic).inc()
                    await self.dead_letter(unreadable + rejected)
                traced.rejected(rejected)
            except Exception as exc:
                code = exc.code if isinstance(exc, RetryBatch) else disposition(exc).code
                traced.failed(code)
                retry = (exc, code)
                if not isinstance(exc, RetryBatch) and disposition(exc).action is not Action.RETRY:
                    if await self._give_up(first, readable, unreadable, exc, handle):
                        retry = None
                    else:
                        log.exception("batch handler failed outside record isolation; retrying")
        if retry is not None:
            await self._retry(message, *retry)
            return
        await self.run_ack(message, records, started)

    async def _give_up(
        self,
        first: Any,
        readable: list[Any],
        unreadable: list[Rejected],
        exc: BaseException,
        handle: Handler,
    ) -> bool:
        """A bug (not the world) failed the same batch ``BUG_ATTEMPTS`` times: run its
        records one at a time and dead-letter, with the reason, only those that fail alone
        (handlers are idempotent, so records the failed attempts half-did are safe to
        redo), instead of retrying a deterministic failure forever."""
        where = (first.topic, first.partition, first.offset)
        self._bug_attempts[where] = self._bug_attempts.get(where, 0) + 1
        if self._bug_attempts[where] < BUG_ATTEMPTS:
            return False
        self._bug_attempts.pop(where, None)
        log.error(
            "batch failed %d times outside record isolation; isolating its records",
            BUG_ATTEMPTS,
            extra={"code": disposition(exc).code, "records": len(readable) + len(unreadable)},
        )
        rejected = list(unreadable)
        for r in readable:
            try:
                rejected += await handle([r])
            except RetryBatch:
                return False
            except Exception as one:
                verdict = disposition(one)
                if verdict.action is Action.RETRY:
                    return False
                rejected.append(Rejected(r, verdict, one))
        try:
            await self.dead_letter(rejected)
        except Exception:
            return False
        return True

    async def run_ack(self, message: Any, records: Sequence[RecordLike], started: float) -> None:
        self._bug_attempts.clear()
        try:
            await message.ack()  # commits the consumer's position: exactly this batch
        except Exception:  # rebalance in progress: the new owner redelivers (idempotent)
            log.warning("offset commit failed; records will be redelivered", exc_info=True)
        self._failures = 0
        self.progress.committed(records)
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
        if producer_broken(exc) and self.renew_producer is not None:
            log.warning("producer lost its sequence state; replacing it", extra={"code": code})
            try:
                await self.renew_producer()
            except Exception:
                log.warning("producer replacement failed; will retry", exc_info=True)
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


def _deterministic(exc: BaseException) -> bool:
    return disposition(exc).action is not Action.RETRY and not producer_broken(exc)


def split_unreadable(records: Sequence[Any]) -> tuple[list[Any], list[Rejected]]:
    """Records a service can read, and dead-letter verdicts for those it cannot (a header
    key that is not UTF-8, or bytes the client library could not parse at all)."""
    readable: list[Any] = []
    bad: list[Rejected] = []
    for r in records:
        why = unreadable_reason(r.headers)
        if why is None:
            readable.append(r)
        else:
            where = f"{r.topic}/{r.partition}@{r.offset}"
            bad.append(
                Rejected(r, Disposition(Action.DLQ, "unreadable_record", f"{why} at {where}"), None)
            )
    return readable, bad
