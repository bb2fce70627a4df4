"""Batch-sized idempotency checks over the storage package's Redis keys.

Same keys as :meth:`rlstream.storage.RedisState.idem_key` (so either side can read them),
but one round trip and one command per batch: ``MGET`` to check, one Lua call to mark.
Per-key ``SET NX EX`` in a pipeline cost ~13% of the ingest service's CPU at 1,000-record
batches, all of it client-side command packing.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

_MARK = """
for i, k in ipairs(KEYS) do
    redis.call('SET', k, '1', 'NX', 'EX', ARGV[1])
end
return #KEYS
"""


class SeenKeys:
    def __init__(self, state: Any, kind: str) -> None:
        self.state = state
        self.kind = kind
        self._mark = state.redis.register_script(_MARK)

    def keys(self, ids: Sequence[str]) -> list[str]:
        prefix = self.state.idem_key(self.kind, "")
        return [prefix + i for i in ids]

    async def seen(self, ids: Sequence[str]) -> list[bool]:
        if not ids:
            return []
        return [v is not None for v in await self.state.redis.mget(self.keys(ids))]

    async def mark(self, ids: Sequence[str]) -> None:
        if ids:
            await self._mark(keys=self.keys(ids), args=[self.state.ttl_s])
