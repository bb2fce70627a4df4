""":class:`TurnStore` over the storage package's Postgres turn buffers."""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Sequence
from datetime import timedelta
from typing import Any

from rlstream.assembly.assembler import BufferedTurn
from rlstream.errors import LateTurnError


class StoreTurnStore:
    """Each delta is appended under ``delta_key=<turn>`` so a redelivery is a no-op."""

    def __init__(self, store: Any, concurrency: int = 8) -> None:
        self.store = store
        self._sem = asyncio.Semaphore(concurrency)

    async def buffer_turns(self, turns: Sequence[BufferedTurn]) -> None:
        async def one(t: BufferedTurn) -> None:
            async with self._sem:
                # closed meanwhile: the assembler already decided on this delta
                with contextlib.suppress(LateTurnError):
                    await self.store.append_turns(
                        t.conversation_id, [t.model_dump(mode="json")], delta_key=str(t.turn)
                    )

        await asyncio.gather(*(one(t) for t in turns))

    async def open_buffers(self) -> list[BufferedTurn]:
        out: list[BufferedTurn] = []
        for buf in await self.store.open_buffers(limit=1_000_000):
            out += [BufferedTurn.model_validate(t) for t in buf.turns]
        return out

    async def close_buffers(self, conversation_ids: Sequence[str]) -> None:
        async def one(cid: str) -> None:
            async with self._sem:
                await self.store.close_buffer(cid)

        await asyncio.gather(*(one(c) for c in conversation_ids))

    async def closed_turns(self, conversation_ids: Sequence[str]) -> dict[str, set[int]]:
        async def one(cid: str) -> tuple[str, set[int]] | None:
            async with self._sem:
                buf = await self.store.get_buffer(cid)
            if buf is None or not buf.closed:
                return None
            turns = {int(t["turn"]) for t in buf.turns if isinstance(t, dict) and "turn" in t}
            return cid, turns

        found = await asyncio.gather(*(one(c) for c in dict.fromkeys(conversation_ids)))
        return dict(f for f in found if f is not None)

    async def load_open(self, conversation_ids: Sequence[str]) -> dict[str, list[BufferedTurn]]:
        async def one(cid: str) -> tuple[str, list[BufferedTurn]] | None:
            async with self._sem:
                buf = await self.store.get_buffer(cid)
            if buf is None or buf.closed:
                return None
            return cid, [BufferedTurn.model_validate(t) for t in buf.turns]

        found = await asyncio.gather(*(one(c) for c in dict.fromkeys(conversation_ids)))
        return dict(f for f in found if f is not None)

    async def idle(self, idle_s: float) -> dict[str, list[BufferedTurn]]:
        bufs = await self.store.idle_buffers(timedelta(seconds=idle_s))
        return {b.conversation_id: [BufferedTurn.model_validate(t) for t in b.turns] for b in bufs}
