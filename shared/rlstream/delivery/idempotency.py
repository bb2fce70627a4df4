"""Batch-sized idempotency checks over the storage package's Redis keys.

Same keys as :meth:`rlstream.storage.RedisState.idem_key` (so either side can read them),
but one round trip and one small command per batch: a Lua call to check, one to mark.
The ids travel as one newline-joined argument and the check returns one ``0``/``1``
string, because client-side packing of a 1,000-argument command (``MGET`` or per-key
``KEYS``) and parsing a 1,000-element reply cost more of the service's CPU than the
round trip. The scripts build their key names, so the Redis must not be a cluster (ours
is one instance); ids containing a newline take the per-key path instead.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

_SPLIT = """
local function each(s, f)
    local pos = 1
    while true do
        local nl = string.find(s, "\\n", pos, true)
        if not nl then f(string.sub(s, pos)); return end
        f(string.sub(s, pos, nl - 1))
        pos = nl + 1
    end
end
"""

_SEEN = (
    _SPLIT
    + """
local p, out = ARGV[1], {}
each(ARGV[2], function(id) out[#out + 1] = tostring(redis.call('EXISTS', p .. id)) end)
return table.concat(out)
"""
)

_MARK = (
    _SPLIT
    + """
local p, ttl, n = ARGV[1], ARGV[3], 0
each(ARGV[2], function(id) redis.call('SET', p .. id, '1', 'NX', 'EX', ttl); n = n + 1 end)
return n
"""
)

_MARK_KEYS = """
for i, k in ipairs(KEYS) do
    redis.call('SET', k, '1', 'NX', 'EX', ARGV[1])
end
return #KEYS
"""


class SeenKeys:
    def __init__(self, state: Any, kind: str) -> None:
        self.state = state
        self.kind = kind
        self.prefix = state.idem_key(kind, "")
        self._seen = state.redis.register_script(_SEEN)
        self._mark = state.redis.register_script(_MARK)
        self._mark_keys = state.redis.register_script(_MARK_KEYS)

    def keys(self, ids: Sequence[str]) -> list[str]:
        return [self.prefix + i for i in ids]

    @staticmethod
    def _joined(ids: Sequence[str]) -> str | None:
        """The ids as one argument, or None if one of them contains the separator."""
        joined = "\n".join(ids)
        return joined if joined.count("\n") == len(ids) - 1 else None

    async def seen(self, ids: Sequence[str]) -> list[bool]:
        if not ids:
            return []
        joined = self._joined(ids)
        if joined is None:
            return [v is not None for v in await self.state.redis.mget(self.keys(ids))]
        flags = await self._seen(keys=[], args=[self.prefix, joined])
        if isinstance(flags, str):
            flags = flags.encode()
        return [f == 49 for f in flags]  # ord("1")

    async def mark(self, ids: Sequence[str]) -> None:
        if not ids:
            return
        joined = self._joined(ids)
        if joined is None:
            await self._mark_keys(keys=self.keys(ids), args=[self.state.ttl_s])
        else:
            await self._mark(keys=[], args=[self.prefix, joined, self.state.ttl_s])
