"""Ingest: raw records (whole conversations or turn deltas) -> redacted, keyed transcripts.

Thin: parsing, redaction and task keys are :class:`rlstream.ingest.Ingestor`; assembly is
:class:`rlstream.assembly.Assembler`; the commit discipline is :mod:`rlstream.delivery`.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Sequence
from typing import Any

from rlstream import limits
from rlstream.assembly import Assembled, Assembler
from rlstream.delivery import Item, Publication, Rejected, publish_once, reject_or_retry
from rlstream.delivery.idempotency import SeenKeys
from rlstream.delivery.runtime import Runtime
from rlstream.delivery.sizing import BROKER_DEFAULT_MAX, FRAMING_BYTES
from rlstream.delivery.versions import conflict, first_wins, transcript_version
from rlstream.errors import MessageTooLarge, ParseError, UnknownFormatError
from rlstream.events import RawTurnDelta, topics
from rlstream.ingest.ids import bound_delta
from rlstream.observability.metrics import DUPLICATES, OPEN_CONVERSATIONS
from rlstream.pii.fields import redact_str, safe_id
from rlstream.transcript import SourceRef, Transcript

log = logging.getLogger("rlstream.services.ingest")


def source_of(record: Any) -> SourceRef:
    return SourceRef(
        kind="kafka", topic=record.topic, partition=record.partition, offset=record.offset
    )


#: room a scored event needs beyond its transcript (rewards, scores, ids)
SCORED_HEADROOM = 64 * 1024


def parse_raw(value: bytes | None, max_bytes: int) -> dict[str, Any]:
    """Bytes -> JSON object, with the size, depth and shape checks every format shares
    (:mod:`rlstream.limits`, the one set of input limits)."""
    if value is None or not value.strip():
        raise ParseError("empty message")
    data = limits.loads(value, max_bytes=max_bytes)
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
                    deltas.append((bound_delta(RawTurnDelta.model_validate(data)), src, r))
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

    def max_transcript_bytes(self) -> int:
        """The one size limit on a transcript, checked here and nowhere later: it and its
        scored event must fit their topics, and the grader must accept it."""
        lim = self.rt.runner.limits
        topic_max = min(
            lim.get(self.rt.topic(topics.TRANSCRIPTS), BROKER_DEFAULT_MAX),
            lim.get(self.rt.topic(topics.SCORED), BROKER_DEFAULT_MAX),
        )
        return min(self.rt.settings.max_message_bytes, topic_max - FRAMING_BYTES - SCORED_HEADROOM)

    async def publish(self, items: list[Item[Transcript]]) -> list[Rejected]:
        """Persist (idempotent), publish, then remember as seen: in that order.

        One version per conversation id: the first stored wins (see delivery.versions)."""
        if not items:
            return []
        rt = self.rt
        items, bad = first_wins(items, lambda t: t.conversation_id, transcript_version, rt.service)
        blobs: dict[int, bytes] = {}
        limit = self.max_transcript_bytes()
        sized: list[Item[Transcript]] = []
        for it in items:
            blob = blobs[id(it)] = it.value.dump_json()
            if len(blob) > limit:
                exc = MessageTooLarge(f"transcript of {len(blob)} bytes > limit {limit}")
                bad.append(reject_or_retry(it.record, exc))
            else:
                sized.append(it)
        new_ids: set[str] = set()

        async def save(batch: list[Item[Transcript]]) -> None:
            new_ids.update(await rt.store.save_transcripts([i.value for i in batch]))

        async def reconcile(
            ok: list[Item[Transcript]], repeats: list[Item[Transcript]], bad: list[Rejected]
        ) -> list[Item[Transcript]]:
            stored_before = [i for i in ok if i.value.conversation_id not in new_ids]
            ok = [i for i in ok if i.value.conversation_id in new_ids]
            if repeats or stored_before:
                ok += await self._first_versions(repeats, stored_before, bad)
            return ok

        def value(it: Item[Transcript]) -> bytes:
            return blobs.get(id(it)) or it.value.dump_json()

        pub = Publication(
            rt.topic(topics.TRANSCRIPTS), _conversation_id, _conversation_key, value, self._stored
        )
        return bad + await publish_once(
            sized, pub, save, rt.runner.outbox, self._seen_keys(), reconcile
        )

    async def _stored(self, ids: list[str]) -> set[str]:
        """Stored conversations among ``ids`` (replayed inputs the seen keys know)."""
        return set(await self.rt.store.stored_ids("transcripts", ids))

    async def _first_versions(
        self,
        published: list[Item[Transcript]],
        stored: list[Item[Transcript]],
        bad: list[Rejected],
    ) -> list[Item[Transcript]]:
        """Repeats of known conversations. ``published``: marked seen (on the topic
        already); ``stored``: in Postgres, maybe never published (a crash, a Redis flush).
        A different version is a conflict; the stored (first) version of the second kind is
        published again, never the repeat's."""
        ids = [i.value.conversation_id for i in (*published, *stored)]
        first = await self.rt.store.get_transcripts(ids)
        # not stored and not storable: erased (docs/erasure.md), so never published again
        erased = await self.rt.store.erased_among([c for c in ids if c not in first])
        out: list[Item[Transcript]] = []
        was_published = {id(i) for i in published}
        for it in (*published, *stored):
            f = first.get(it.value.conversation_id)
            if it.value.conversation_id in erased:
                continue
            if f is not None and transcript_version(f) != transcript_version(it.value):
                bad.append(conflict(it, self.rt.service, "conversation"))
            elif id(it) in was_published:
                DUPLICATES.labels(self.rt.service).inc()
            if id(it) not in was_published:
                out.append(Item(it.record, f if f is not None else it.value))
        return out

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


def _conversation_id(t: Transcript) -> str:
    return t.conversation_id


def _conversation_key(t: Transcript) -> bytes:
    return t.conversation_id.encode()


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
