"""Ingest: raw records (whole conversations or turn deltas) -> redacted, keyed transcripts.

Thin: parsing, redaction and task keys are :class:`rlstream.ingest.Ingestor`; assembly is
:class:`rlstream.assembly.Assembler`; the commit discipline is :mod:`rlstream.delivery`.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Sequence
from typing import Any

import orjson

from rlstream.assembly import Assembled, Assembler
from rlstream.delivery import Item, Rejected, apply_isolating, reject_or_retry
from rlstream.delivery.idempotency import SeenKeys
from rlstream.delivery.runtime import Runtime
from rlstream.errors import MessageTooLarge, ParseError, UnknownFormatError
from rlstream.events import RawTurnDelta, topics
from rlstream.observability.metrics import OPEN_CONVERSATIONS
from rlstream.pii.fields import redact_str, safe_id
from rlstream.transcript import SourceRef, Transcript

log = logging.getLogger("rlstream.services.ingest")


def source_of(record: Any) -> SourceRef:
    return SourceRef(
        kind="kafka", topic=record.topic, partition=record.partition, offset=record.offset
    )


def parse_raw(value: bytes | None, max_bytes: int) -> dict[str, Any]:
    """Bytes -> JSON object, with the size and shape checks every format shares."""
    if value is None or not value.strip():
        raise ParseError("empty message")
    if len(value) > max_bytes:
        raise MessageTooLarge(f"{len(value)} bytes > limit {max_bytes}")
    try:
        data = orjson.loads(value)
    except orjson.JSONDecodeError as exc:
        raise ParseError(f"invalid JSON: {exc}") from exc
    if not isinstance(data, dict):
        raise UnknownFormatError(f"expected a JSON object, got {type(data).__name__}")
    return data


class IngestHandler:
    def __init__(self, rt: Runtime, ingestor: Any, assembler: Assembler) -> None:
        self.rt = rt
        self.ingestor = ingestor
        self.assembler = assembler
        self.lock = asyncio.Lock()  # the sweeper and the consumer share the assembler
        self._seen: SeenKeys | None = None

    def _seen_keys(self) -> SeenKeys | None:
        if self._seen is None and self.rt.redis is not None:
            self._seen = SeenKeys(self.rt.redis, "transcript")
        return self._seen

    async def handle(self, records: Sequence[Any]) -> list[Rejected]:
        rejected: list[Rejected] = []
        whole: list[Item[Transcript]] = []
        deltas: list[tuple[RawTurnDelta, SourceRef, Any]] = []
        max_bytes = self.rt.settings.max_message_bytes
        for r in records:
            try:
                data = parse_raw(r.value, max_bytes)
                src = source_of(r)
                if data.get("kind") == "turn_delta":
                    deltas.append((RawTurnDelta.model_validate(data), src, r))
                else:
                    whole.append(Item(r, self.ingestor.process(data, src)))
            except Exception as exc:
                rejected.append(reject_or_retry(r, exc))
        async with self.lock:
            closed: list[Assembled] = []
            if deltas:
                closed, errors = await self.assembler.add([(d, s) for d, s, _ in deltas])
                rejected += [reject_or_retry(deltas[i][2], e) for i, e in errors]
                closing = {d.conversation_id: r for d, _, r in deltas}
                for conv in closed:
                    rec = closing.get(conv.conversation_id, deltas[-1][2])
                    try:
                        whole.append(Item(rec, self.ingestor.process(conv.record, conv.source)))
                    except Exception as exc:
                        rejected.append(reject_or_retry(rec, exc))
            rejected += await self.publish(whole)
            await self.assembler.release([c.conversation_id for c in closed])
            OPEN_CONVERSATIONS.labels("ingest").set(self.assembler.open_count)
        return rejected

    async def publish(self, items: list[Item[Transcript]]) -> list[Rejected]:
        """Persist (idempotent), publish, then remember as seen: in that order."""
        if not items:
            return []
        rt = self.rt
        seen_keys = self._seen_keys()
        if seen_keys is not None:
            seen = await seen_keys.seen([i.value.conversation_id for i in items])
            items = [i for i, s in zip(items, seen, strict=True) if not s]

        async def save(batch: list[Item[Transcript]]) -> None:
            await rt.store.save_transcripts([i.value for i in batch])

        ok, bad = await apply_isolating(items, save)
        box = rt.runner.outbox()
        for it in ok:
            t = it.value
            await box.add(
                rt.topic(topics.TRANSCRIPTS), t.conversation_id.encode(), t.dump_json(), ref=it
            )
        failed = {id(ref): exc for ref, exc in await box.flush()}
        for it in ok:
            if id(it) in failed:
                bad.append(reject_or_retry(it.record, failed[id(it)]))
        published = [it.value.conversation_id for it in ok if id(it) not in failed]
        if seen_keys is not None:
            await seen_keys.mark(published)
        return bad

    async def sweep(self) -> int:
        """Close idle conversations (no end marker) and publish them."""
        async with self.lock:
            expired = await self.assembler.expired()
            if not expired:
                return 0
            items: list[Item[Transcript]] = []
            for conv in expired:
                try:
                    items.append(
                        Item(
                            _Synthetic(conv.source), self.ingestor.process(conv.record, conv.source)
                        )
                    )
                except Exception as exc:
                    log.warning(
                        "idle conversation rejected",
                        extra={
                            "conversation_id": safe_id(conv.conversation_id),
                            "error": redact_str(repr(exc))[:500],
                        },
                    )
                    await self.rt.runner.dead_letter(
                        [reject_or_retry(_Synthetic(conv.source), exc)]
                    )
            bad = await self.publish(items)
            if bad:
                await self.rt.runner.dead_letter(bad)
            await self.assembler.release([c.conversation_id for c in expired])
            return len(expired)


class _Synthetic:
    """A record-shaped stand-in for a conversation closed by the idle timer (no single
    source record); DLQ entries point at its first delta."""

    def __init__(self, src: SourceRef) -> None:
        self.topic = src.topic or topics.CONVERSATIONS_RAW
        self.partition = src.partition or 0
        self.offset = src.offset or 0
        self.timestamp = 0
        self.key = None
        self.value = b""
        self.headers: list[tuple[str, bytes]] = []
