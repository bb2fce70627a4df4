"""Erased conversations and Kafka: tombstones where a topic is compacted, retention elsewhere.

Kafka cannot delete one record from a topic whose ``cleanup.policy`` is ``delete`` (every
rlstream topic as shipped, :mod:`rlstream.events.topic_table`): such records go when the
topic's ``retention.ms`` passes. On a topic an operator made compacted, a tombstone (the
key with a null value) makes the log cleaner drop every earlier record of that key. Only
keys that are erased ids are tombstoned (conversation ids, rollout ids), never a task key
or an agent another conversation shares. So this step reads each topic's policy from the
cluster, tombstones the erased keys in the compacted ones, and reports the others with the
time their records of the erased conversations expire at the latest.
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import UTC, datetime, timedelta

from pydantic import BaseModel, ConfigDict, Field

from rlstream.delivery.topics import TopicAdmin
from rlstream.events.topic_table import TopicSettings, table_for


class TopicOutcome(BaseModel):
    """What the erasure did, or could not do, per topic."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    #: topic -> tombstones written (compacted topics)
    tombstoned: dict[str, int] = Field(default_factory=dict)
    #: topic -> when records written before the erasure expire at the latest (ISO time)
    retained_until: dict[str, str] = Field(default_factory=dict)
    #: why the step did not run (no Kafka configured, the cluster unreachable)
    skipped: str | None = None


def _policy(config: dict[str, str]) -> tuple[bool, int | None]:
    compacted = "compact" in config.get("cleanup.policy", "delete")
    ms = config.get("retention.ms")
    return compacted, (int(ms) if ms is not None and int(ms) >= 0 else None)


async def erase_topics(
    settings: TopicSettings,
    keys: Sequence[str],
    *,
    dry_run: bool = False,
) -> TopicOutcome:
    """Tombstone ``keys`` in every compacted topic of the table; report the rest."""
    from aiokafka import AIOKafkaProducer

    from rlstream.delivery.kafka_security import client_kwargs

    table = table_for(settings)
    now = datetime.now(UTC)
    async with TopicAdmin(settings) as admin:
        live = await admin.live(s.name for s in table)
    tombstoned: dict[str, int] = {}
    retained: dict[str, str] = {}
    compacted: list[str] = []
    for name, topic in sorted(live.items()):
        is_compacted, retention_ms = _policy(dict(topic.config))
        if is_compacted:
            compacted.append(name)
        if retention_ms is not None:
            until = now + timedelta(milliseconds=retention_ms)
            retained[name] = until.isoformat(timespec="seconds")
        elif not is_compacted:
            retained[name] = "never (retention.ms -1)"
    if compacted and keys and not dry_run:
        producer = AIOKafkaProducer(
            bootstrap_servers=settings.kafka_bootstrap, acks="all", **client_kwargs(settings)
        )
        await producer.start()
        try:
            for name in compacted:
                for key in keys:
                    await producer.send(name, value=None, key=key.encode())
                tombstoned[name] = len(keys)
            await producer.flush()
        finally:
            await producer.stop()
    elif compacted:
        tombstoned = dict.fromkeys(compacted, len(keys))
    for name in compacted:  # the log cleaner drops what a tombstone covers
        retained.pop(name, None)
    return TopicOutcome(tombstoned=tombstoned, retained_until=retained)
