"""An in-memory :class:`TurnStore` for unit tests and the single-process embedded mode."""

from __future__ import annotations

from collections.abc import Sequence

from rlstream.assembly.assembler import BufferedTurn


class MemoryTurnStore:
    def __init__(self) -> None:
        self.turns: dict[tuple[str, int], BufferedTurn] = {}
        self.closed: set[str] = set()

    async def buffer_turns(self, turns: Sequence[BufferedTurn]) -> None:
        for t in turns:
            self.turns.setdefault((t.conversation_id, t.turn), t)

    async def open_buffers(self) -> list[BufferedTurn]:
        return sorted(self.turns.values(), key=lambda t: (t.conversation_id, t.turn))

    async def close_buffers(self, conversation_ids: Sequence[str]) -> None:
        ids = set(conversation_ids)
        self.closed |= ids
        for key in [k for k in self.turns if k[0] in ids]:
            del self.turns[key]

    async def closed_ids(self, conversation_ids: Sequence[str]) -> set[str]:
        return self.closed & set(conversation_ids)
