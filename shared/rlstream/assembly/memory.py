"""An in-memory :class:`TurnStore` for unit tests and the single-process embedded mode."""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence

from rlstream.assembly.assembler import BufferedTurn


class MemoryTurnStore:
    def __init__(self, clock: Callable[[], float] = time.time) -> None:
        self.clock = clock
        self.turns: dict[tuple[str, int], BufferedTurn] = {}
        self.closed: dict[str, set[int]] = {}

    async def buffer_turns(self, turns: Sequence[BufferedTurn]) -> None:
        for t in turns:
            self.turns.setdefault((t.conversation_id, t.turn), t)

    async def open_buffers(self) -> list[BufferedTurn]:
        return sorted(self.turns.values(), key=lambda t: (t.conversation_id, t.turn))

    async def close_buffers(self, conversation_ids: Sequence[str]) -> None:
        ids = set(conversation_ids)
        for cid in ids:
            self.closed.setdefault(cid, set())
        for key in [k for k in self.turns if k[0] in ids]:
            self.closed[key[0]].add(key[1])
            del self.turns[key]

    async def closed_turns(self, conversation_ids: Sequence[str]) -> dict[str, set[int]]:
        return {c: set(self.closed[c]) for c in conversation_ids if c in self.closed}

    async def load_open(self, conversation_ids: Sequence[str]) -> dict[str, list[BufferedTurn]]:
        ids = set(conversation_ids)
        out: dict[str, list[BufferedTurn]] = {}
        for (cid, _), t in sorted(self.turns.items()):
            if cid in ids:
                out.setdefault(cid, []).append(t)
        return out

    async def idle(self, idle_s: float) -> dict[str, list[BufferedTurn]]:
        last: dict[str, float] = {}
        for (cid, _), t in self.turns.items():
            last[cid] = max(last.get(cid, 0.0), t.received_at)
        limit = self.clock() - idle_s
        return await self.load_open([c for c, ts in last.items() if ts <= limit])
