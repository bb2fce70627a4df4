"""The Kafka side of replays: read dead letters, re-read a topic range, publish the copies.

One-shot clients for the CLI (``rlstream dlq``, ``rlstream replay``), built from the same
settings as the services' (:mod:`.kafka_security`), failing with one line
(:func:`.kafka_connect.start_or_explain`). A range is fixed when it is planned: its end is
each partition's end offset at that moment, so copying a topic onto itself terminates.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from rlstream.delivery.kafka_connect import start_or_explain
from rlstream.delivery.kafka_security import client_kwargs
from rlstream.delivery.replay import Message, record_message
from rlstream.delivery.replay_select import Letter
from rlstream.errors import ConfigError
from rlstream.events.models import DLQRecord
from rlstream.events.topics import dlq
from rlstream.settings import Settings

#: records sent before waiting for their acks (bounds memory on a large range)
CHUNK = 500
_MAX_REQUEST = 16 << 20


def _consumer(settings: Settings) -> Any:
    from aiokafka import AIOKafkaConsumer

    # earliest, not the default latest: assign() may start a reset to the default that
    # lands after a seek and leaves every position at the end (seen under load)
    return AIOKafkaConsumer(
        bootstrap_servers=settings.kafka_bootstrap,
        enable_auto_commit=False,
        auto_offset_reset="earliest",
        **client_kwargs(settings),
    )


def _producer(settings: Settings) -> Any:
    from aiokafka import AIOKafkaProducer

    return AIOKafkaProducer(
        bootstrap_servers=settings.kafka_bootstrap,
        acks="all",
        enable_idempotence=True,
        linger_ms=5,
        max_request_size=_MAX_REQUEST,
        **client_kwargs(settings),
    )


async def _partitions(cons: Any, topic: str) -> list[int]:
    parts = cons.partitions_for_topic(topic)
    if not parts:
        await cons._client.force_metadata_update()
        parts = cons.partitions_for_topic(topic) or set()
    return sorted(parts)


async def dlq_topics(settings: Settings) -> list[str]:
    """Every dead-letter topic on the cluster (``*.dlq``)."""
    cons = _consumer(settings)
    await start_or_explain(cons, settings)
    try:
        return sorted(t for t in await cons.topics() if t.endswith(".dlq"))
    finally:
        await cons.stop()


async def read_letters(settings: Settings, topic: str) -> list[Letter]:
    """Every letter on ``<topic>.dlq`` now, with its coordinates (None: not a DLQRecord)."""
    from aiokafka import TopicPartition

    name = dlq(topic)
    cons = _consumer(settings)
    await start_or_explain(cons, settings)
    try:
        parts = await _partitions(cons, name)
        if not parts:
            raise ConfigError(
                f"no topic {name} on {settings.kafka_bootstrap}: nothing was dead-lettered"
            )
        tps = [TopicPartition(name, p) for p in parts]
        cons.assign(tps)
        end = await cons.end_offsets(tps)
        await cons.seek_to_beginning(*tps)
        out: list[Letter] = []
        while any([await cons.position(tp) < end[tp] for tp in tps]):
            for recs in (await cons.getmany(timeout_ms=500)).values():
                for r in recs:
                    where = f"{r.topic}/{r.partition}/{r.offset}"
                    try:
                        out.append((where, DLQRecord.model_validate_json(r.value or b"")))
                    except ValueError:
                        out.append((where, None))
        return out
    finally:
        await cons.stop()


async def publish(settings: Settings, messages: Sequence[Message]) -> None:
    """Send ``messages`` and wait for every ack (acks=all, idempotent producer)."""
    prod = _producer(settings)
    await start_or_explain(prod, settings)
    try:
        for i in range(0, len(messages), CHUNK):
            futs = [
                await prod.send(t, value=v, key=k, headers=h) for t, k, v, h in messages[i:i + CHUNK]
            ]  # fmt: skip
            await asyncio.gather(*futs)
    finally:
        await prod.stop()


@dataclass(frozen=True)
class Range:
    """What ``rlstream replay`` re-reads: a topic (some partitions) from an offset or a time."""

    topic: str
    partitions: tuple[int, ...] = ()  # empty: every partition
    from_offset: int | None = None
    since_ms: int | None = None


#: partition -> (first offset to copy, end offset: one past the last)
Plan = dict[int, tuple[int, int]]


async def plan_range(settings: Settings, rng: Range) -> Plan:
    """Start and end offsets per partition, fixed now."""
    from aiokafka import TopicPartition

    if (rng.from_offset is None) == (rng.since_ms is None):
        raise ConfigError("give exactly one of --from-offset N or --since TIME")
    cons = _consumer(settings)
    await start_or_explain(cons, settings)
    try:
        parts = await _partitions(cons, rng.topic)
        if not parts:
            raise ConfigError(f"no topic {rng.topic} on {settings.kafka_bootstrap}")
        unknown = sorted(set(rng.partitions) - set(parts))
        if unknown:
            raise ConfigError(f"{rng.topic} has partitions {parts}, not {unknown}")
        tps = [TopicPartition(rng.topic, p) for p in (rng.partitions or parts)]
        first = await cons.beginning_offsets(tps)
        end = await cons.end_offsets(tps)
        if rng.since_ms is not None:
            found = await cons.offsets_for_times({tp: rng.since_ms for tp in tps})
            start = {tp: end[tp] if found[tp] is None else found[tp].offset for tp in tps}
        else:
            start = {tp: max(first[tp], rng.from_offset or 0) for tp in tps}
        return {tp.partition: (min(start[tp], end[tp]), end[tp]) for tp in tps}
    finally:
        await cons.stop()


async def copy_range(
    settings: Settings,
    topic: str,
    plan: Plan,
    rid: str,
    to_topic: str | None = None,
    advance: Callable[[int], None] = lambda n: None,
) -> int:
    """Publish every record of ``plan`` onto ``to_topic`` (default: ``topic``, each on its
    own partition) tagged with replay id ``rid``; returns how many were sent."""
    from aiokafka import TopicPartition

    todo = {TopicPartition(topic, p): se for p, se in plan.items() if se[0] < se[1]}
    if not todo:
        return 0
    cons, prod = _consumer(settings), _producer(settings)
    await start_or_explain(cons, settings)
    try:
        await start_or_explain(prod, settings)
        try:
            cons.assign(list(todo))
            for tp, (start, _) in todo.items():
                cons.seek(tp, start)
            return await _copy(cons, prod, todo, rid, to_topic, advance)
        finally:
            await prod.stop()
    finally:
        await cons.stop()


async def _copy(
    cons: Any,
    prod: Any,
    todo: dict[Any, tuple[int, int]],
    rid: str,
    to_topic: str | None,
    advance: Callable[[int], None],
) -> int:
    sent = 0
    while any([await cons.position(tp) < end for tp, (_, end) in todo.items()]):
        futs = []
        for tp, recs in (await cons.getmany(*todo, timeout_ms=500, max_records=CHUNK)).items():
            for r in recs:
                if r.offset >= todo[tp][1]:
                    continue
                t, k, v, h = record_message(r, rid, to_topic)
                part = r.partition if to_topic is None else None
                futs.append(await prod.send(t, value=v, key=k, headers=h, partition=part))
        if futs:
            await asyncio.gather(*futs)
            sent += len(futs)
            advance(len(futs))
        # a partition read to its planned end stops being fetched (its new records are
        # not part of the range, and may be this replay's own copies)
        for tp, (_, end) in todo.items():
            if await cons.position(tp) >= end and tp not in cons.paused():
                cons.pause(tp)
    return sent
