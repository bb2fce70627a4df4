"""The Kafka side of a status snapshot: end offsets, committed offsets, the DLQ tail.

One consumer without a group (it never joins or commits: reading the status must not
move anyone's offsets) and one admin client for the groups' committed offsets, both built
from the same security settings as every other client (:mod:`rlstream.delivery.kafka_security`)
and kept open between snapshots of the live view; a failure drops them so the next
snapshot reconnects.
"""

from __future__ import annotations

import asyncio
import contextlib
import time
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

from rlstream.delivery.kafka_connect import diagnose
from rlstream.delivery.kafka_security import client_kwargs
from rlstream.errors import TransientError
from rlstream.events.models import DLQRecord
from rlstream.settings import Settings
from rlstream.stackstatus.model import DeadLetter


@dataclass(frozen=True)
class TopicOffsets:
    """Per partition: the first retained offset and the end offset (next to be written)."""

    begin: dict[int, int]
    end: dict[int, int]

    @property
    def produced(self) -> int:
        return sum(self.end.values())


class KafkaProbe:
    def __init__(self, settings: Settings, timeout_s: float = 5.0) -> None:
        self.settings = settings
        self.timeout_s = timeout_s
        self._consumer: Any = None
        self._admin: Any = None
        self._letters_at: tuple[tuple[str, int, int], ...] | None = None
        self._letters: list[DeadLetter] = []

    async def _clients(self) -> tuple[Any, Any]:
        if self._consumer is None:
            from aiokafka import AIOKafkaConsumer
            from aiokafka.admin import AIOKafkaAdminClient

            line = await diagnose(self.settings, timeout_s=self.timeout_s)
            if line is not None:
                raise TransientError(line)
            ms = int(self.timeout_s * 1000)
            kw = client_kwargs(self.settings)
            boot = self.settings.kafka_bootstrap
            cons = AIOKafkaConsumer(
                bootstrap_servers=boot,
                enable_auto_commit=False,
                auto_offset_reset="earliest",  # a reset racing a seek must not skip letters
                request_timeout_ms=ms,
                **kw,
            )
            admin = AIOKafkaAdminClient(bootstrap_servers=boot, request_timeout_ms=ms, **kw)
            try:
                await asyncio.wait_for(cons.start(), self.timeout_s)
                await asyncio.wait_for(admin.start(), self.timeout_s)
            except BaseException:
                await _quietly_stop(cons, admin)
                raise
            self._consumer, self._admin = cons, admin
        return self._consumer, self._admin

    async def close(self) -> None:
        cons, admin = self._consumer, self._admin
        self._consumer = self._admin = None
        await _quietly_stop(cons, admin)

    async def offsets(self, names: Iterable[str]) -> dict[str, TopicOffsets]:
        """Offsets of the named topics that exist (absent ones are left out)."""
        from aiokafka import TopicPartition

        cons, admin = await self._clients()
        # the whole cluster's metadata, fresh: naming topics would auto-create them on some
        # brokers, and the consumer's own view knows only the topics it was asked about
        meta = await asyncio.wait_for(admin.describe_topics(None), self.timeout_s)
        parts = {t["topic"]: sorted(p["partition"] for p in t["partitions"])
                 for t in meta if not t.get("error_code")}  # fmt: skip
        tps = [TopicPartition(n, p) for n in names for p in parts.get(n, ())]
        if not tps:
            return {}
        begin = await asyncio.wait_for(cons.beginning_offsets(tps), self.timeout_s)
        end = await asyncio.wait_for(cons.end_offsets(tps), self.timeout_s)
        out: dict[str, TopicOffsets] = {}
        for tp in tps:
            t = out.setdefault(tp.topic, TopicOffsets({}, {}))
            t.begin[tp.partition], t.end[tp.partition] = int(begin[tp]), int(end[tp])
        return out

    async def committed(self, group: str) -> dict[tuple[str, int], int]:
        """The group's committed offset per (topic, partition); none committed: absent."""
        _, admin = await self._clients()
        got = await asyncio.wait_for(admin.list_consumer_group_offsets(group), self.timeout_s)
        return {
            (tp.topic, tp.partition): int(om.offset) for tp, om in got.items() if om.offset >= 0
        }

    async def dead_letters(self, offsets: dict[str, TopicOffsets], n: int) -> list[DeadLetter]:
        """The ``n`` newest dead letters over the given DLQ topics, newest first. Re-read
        only when a DLQ's end offset moved since the last call."""
        from aiokafka import TopicPartition

        at = tuple(sorted((t, p, e) for t, o in offsets.items() for p, e in o.end.items()))
        if at == self._letters_at:
            return self._letters
        cons, _ = await self._clients()
        todo = {
            TopicPartition(t, p): (max(offsets[t].begin[p], e - n), e)
            for t, p, e in at
            if e > offsets[t].begin[p]
        }
        letters: list[DeadLetter] = []
        if todo:
            cons.assign(list(todo))
            for tp, (start, _) in todo.items():
                cons.seek(tp, start)
            deadline = time.monotonic() + self.timeout_s
            while any([await cons.position(tp) < end for tp, (_, end) in todo.items()]):
                if time.monotonic() > deadline:
                    raise TimeoutError("reading the dead-letter topics took too long")
                for recs in (await cons.getmany(timeout_ms=200)).values():
                    letters.extend(_letter(r) for r in recs if r.offset < todo[_tp(r)][1])
            cons.unsubscribe()
        letters.sort(key=lambda d: (d.failed_at is not None, d.failed_at, d.at), reverse=True)
        self._letters_at, self._letters = at, letters[:n]
        return self._letters


def _tp(r: Any) -> Any:
    from aiokafka import TopicPartition

    return TopicPartition(r.topic, r.partition)


def _letter(r: Any) -> DeadLetter:
    where = f"{r.topic}/{r.partition}/{r.offset}"
    try:
        e = DLQRecord.model_validate_json(r.value or b"")
    except ValueError:
        return DeadLetter(
            at=where, source="?", failed_at=None, service="?", code="?",
            reason="not a dead letter (the value is not a DLQRecord)",
        )  # fmt: skip
    return DeadLetter(
        at=where,
        source=f"{e.topic}/{e.partition}/{e.offset}",
        failed_at=e.failed_at,
        service=e.service,
        code=e.error_code,
        reason=f"{e.error_class}: {e.error_message}"[:300],
    )


async def _quietly_stop(*clients: Any) -> None:
    for c in clients:
        if c is None:
            continue
        with contextlib.suppress(Exception):
            await asyncio.wait_for(c.stop() if hasattr(c, "stop") else c.close(), 5)
