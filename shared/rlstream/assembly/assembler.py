"""Turn-delta assembly: deltas in, whole conversations out.

Agents that stream turns send :class:`~rlstream.events.models.RawTurnDelta` records keyed by
conversation id. The assembler keeps each open conversation's deltas, closes it on the
end marker or after ``idle_timeout_s`` without a delta, and hands back one record in the
canonical shape the ingest library parses (``conversation_id``, ``messages``, metadata).

Durability: every delta is written to the store's turn buffer (idempotent on
``(conversation_id, turn)``) before its offset is committed, and a restarted ingest
re-opens the buffers, so a crash loses no turn. A delta that arrives after its
conversation closed is a *late turn*: dead-lettered with reason ``late_turn``, or, with
``late_policy="reopen"``, it starts a continuation segment ``<id>~<n>``.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal, Protocol

from pydantic import BaseModel, ConfigDict, JsonValue

from rlstream.errors import LateTurnError, SchemaViolation
from rlstream.events.models import RawTurnDelta
from rlstream.transcript.model import SourceRef


class AssemblyOptions(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")

    idle_timeout_s: float = 300.0
    late_policy: Literal["dlq", "reopen"] = "dlq"
    max_turns: int = 2000


class BufferedTurn(BaseModel):
    """One stored delta (the unit the store persists and restores)."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    conversation_id: str
    turn: int
    delta: dict[str, JsonValue]
    received_at: float
    source: SourceRef


class TurnStore(Protocol):
    """Durable turn buffers (implemented over Postgres by the storage package)."""

    async def buffer_turns(self, turns: Sequence[BufferedTurn]) -> None: ...
    async def open_buffers(self) -> list[BufferedTurn]: ...
    async def close_buffers(self, conversation_ids: Sequence[str]) -> None: ...
    async def closed_turns(self, conversation_ids: Sequence[str]) -> dict[str, set[int]]:
        """For each given conversation that is closed: the turn numbers it had."""
        ...

    async def load_open(self, conversation_ids: Sequence[str]) -> dict[str, list[BufferedTurn]]:
        """Every stored turn of each given conversation that is still open."""
        ...

    async def idle(self, idle_s: float) -> dict[str, list[BufferedTurn]]:
        """Open conversations with no delta (from any ingest instance) for ``idle_s``."""
        ...


@dataclass
class _Open:
    turns: dict[int, RawTurnDelta] = field(default_factory=dict)
    last_seen: float = 0.0
    first_source: SourceRef = field(default_factory=SourceRef)
    ended: bool = False


@dataclass(frozen=True)
class Assembled:
    """A closed conversation, ready for :meth:`rlstream.ingest.Ingestor.process`."""

    conversation_id: str
    record: dict[str, Any]
    source: SourceRef
    reason: Literal["end", "idle"]


def _segment(conversation_id: str, closed: set[str]) -> str:
    n = 1
    while f"{conversation_id}~{n}" in closed:
        n += 1
    return f"{conversation_id}~{n}"


class Assembler:
    """Holds open conversations in memory, mirrored to a :class:`TurnStore`."""

    def __init__(
        self,
        store: TurnStore,
        options: AssemblyOptions | None = None,
        clock: Callable[[], float] = time.time,
    ) -> None:
        self.store = store
        self.options = options or AssemblyOptions()
        self.clock = clock
        self._open: dict[str, _Open] = {}
        self._recently_closed: dict[str, set[int]] = {}

    @property
    def open_count(self) -> int:
        return len(self._open)

    async def restore(self) -> int:
        """Reload open conversations from the store (after a restart)."""
        stored: dict[str, list[BufferedTurn]] = {}
        for bt in await self.store.open_buffers():
            stored.setdefault(bt.conversation_id, []).append(bt)
        self._merge(stored)
        return len(self._open)

    async def resolve_late(self, deltas: Sequence[RawTurnDelta]) -> dict[int, RawTurnDelta | None]:
        """Map each delta (by index) to the delta to buffer, applying the late policy.

        Absent from the result: a late turn under ``late_policy="dlq"``. Mapped to None: a
        redelivery of a turn its closed conversation already had (at-least-once input after
        a crash between closing and committing): consumed, nothing to do.
        """
        unknown = [d.conversation_id for d in deltas if d.conversation_id not in self._open]
        closed: dict[str, set[int]] = {
            c: self._recently_closed[c] for c in unknown if c in self._recently_closed
        }
        rest = [c for c in unknown if c not in closed]
        if rest:
            closed.update(await self.store.closed_turns(rest))
        out: dict[int, RawTurnDelta | None] = {}
        for i, d in enumerate(deltas):
            cid = d.conversation_id
            if cid not in closed:
                out[i] = d
            elif d.turn in closed[cid]:
                out[i] = None
            elif self.options.late_policy == "reopen":
                seg = _segment(cid, set(closed) | set(self._recently_closed))
                out[i] = d.model_copy(update={"conversation_id": seg})
        return out

    async def add(
        self, deltas: Sequence[tuple[RawTurnDelta, SourceRef]]
    ) -> tuple[list[Assembled], list[tuple[int, Exception]]]:
        """Buffer deltas durably; return conversations closed by an end marker and
        per-index errors (late turns, too many turns) for the caller to dead-letter."""
        errors: list[tuple[int, Exception]] = []
        resolved = await self.resolve_late([d for d, _ in deltas])
        now = self.clock()
        rows: list[BufferedTurn] = []
        touched: list[str] = []
        for i, (orig, source) in enumerate(deltas):
            if i in resolved and resolved[i] is None:
                continue  # a redelivered turn of a conversation already closed
            d = resolved.get(i)
            if d is None:
                errors.append(
                    (
                        i,
                        LateTurnError(
                            f"turn {orig.turn} for closed conversation {orig.conversation_id}"
                        ),
                    )
                )
                continue
            conv = self._open.setdefault(d.conversation_id, _Open(first_source=source))
            if d.turn not in conv.turns and len(conv.turns) >= self.options.max_turns:
                errors.append(
                    (
                        i,
                        SchemaViolation(
                            f"conversation {d.conversation_id} exceeds {self.options.max_turns} turns"
                        ),
                    )
                )
                continue
            conv.turns[d.turn] = d
            conv.last_seen = now
            conv.ended = conv.ended or d.end
            rows.append(
                BufferedTurn(
                    conversation_id=d.conversation_id,
                    turn=d.turn,
                    delta=d.model_dump(mode="json"),
                    received_at=now,
                    source=source,
                )
            )
            touched.append(d.conversation_id)
        if rows:
            await self.store.buffer_turns(rows)
        ending = [cid for cid in dict.fromkeys(touched) if self._open[cid].ended]
        # the store is the truth: after a rebalance, earlier turns may have been buffered
        # by another ingest instance
        self._merge(await self.store.load_open(ending) if ending else {})
        return [self._assemble(cid, "end") for cid in ending], errors

    async def expired(self) -> list[Assembled]:
        """Conversations idle for longer than the timeout (they close without an end).

        Idleness is decided by the store (the last delta from *any* instance), so an
        instance that lost the partition in a rebalance never closes a live conversation.
        """
        idle = await self.store.idle(self.options.idle_timeout_s)
        for cid in [c for c in self._open if c not in idle]:
            if self._open[cid].last_seen <= self.clock() - self.options.idle_timeout_s:
                self._open.pop(cid)  # owned elsewhere now, or already closed
        self._merge(idle)
        # an ended one here was left open by a crash between closing and releasing
        return [self._assemble(cid, "end" if self._open[cid].ended else "idle") for cid in idle]

    def _merge(self, stored: dict[str, list[BufferedTurn]]) -> None:
        for cid, turns in stored.items():
            for bt in turns:
                conv = self._open.setdefault(cid, _Open(first_source=bt.source))
                if bt.turn not in conv.turns:
                    conv.turns[bt.turn] = RawTurnDelta.model_validate(bt.delta)
                conv.last_seen = max(conv.last_seen, bt.received_at)
                conv.ended = conv.ended or conv.turns[bt.turn].end

    async def release(self, conversation_ids: Sequence[str]) -> None:
        """Forget closed conversations once their transcripts are durable and published."""
        if not conversation_ids:
            return
        await self.store.close_buffers(conversation_ids)
        for cid in conversation_ids:
            conv = self._open.pop(cid, None)
            self._recently_closed[cid] = set(conv.turns) if conv is not None else set()
        while len(self._recently_closed) > 100_000:
            self._recently_closed.pop(next(iter(self._recently_closed)))

    def _assemble(self, cid: str, reason: Literal["end", "idle"]) -> Assembled:
        conv = self._open[cid]
        order = sorted(conv.turns)
        messages: list[JsonValue] = []
        metadata: dict[str, JsonValue] = {}
        for t in order:
            messages.extend(conv.turns[t].messages)
            metadata.update(conv.turns[t].metadata)
        gaps = sorted(set(range(order[-1] + 1)) - set(order)) if order else []
        record: dict[str, Any] = {**metadata, "conversation_id": cid, "messages": messages}
        extra_meta = (
            dict(record.get("metadata") or {}) if isinstance(record.get("metadata"), dict) else {}
        )
        if "~" in cid:
            extra_meta["continued_from"] = cid.rsplit("~", 1)[0]
        extra_meta["assembled"] = {"turns": len(order), "closed_by": reason, "missing_turns": gaps}
        record["metadata"] = extra_meta
        return Assembled(cid, record, conv.first_source, reason)
