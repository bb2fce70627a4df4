"""Near-duplicate index on Redis: 64-bit SimHash signatures bucketed by bands.

A signature is split into ``bands`` equal bit-bands; each band value names a Redis set of
item ids. Two signatures within Hamming distance ``bands - 1`` share at least one band
(pigeonhole), so candidates come from a few set reads; a Lua script checks the exact
distance and inserts in the same atomic step. Scoped (e.g. per agent) so unrelated items
never collide. Like the counter script, it touches several keys: plain Redis, not Cluster.
"""

from __future__ import annotations

import hashlib
import re
from collections import Counter

from redis.asyncio import Redis

_WORD = re.compile(r"\w+", re.UNICODE)
_MASK = (1 << 64) - 1


def simhash64(text: str, *, shingle: int = 2) -> int:
    """SimHash of ``text`` over lower-cased word ``shingle``-grams (stable across runs)."""
    words = _WORD.findall(text.lower())
    grams = [" ".join(words[i : i + shingle]) for i in range(max(1, len(words) - shingle + 1))]
    weights = [0] * 64
    for gram, count in Counter(grams).items():
        h = int.from_bytes(hashlib.blake2b(gram.encode(), digest_size=8).digest(), "big")
        for bit in range(64):
            weights[bit] += count if h >> bit & 1 else -count
    return sum(1 << bit for bit in range(64) if weights[bit] > 0)


def hamming(a: int, b: int) -> int:
    return ((a ^ b) & _MASK).bit_count()


# Candidates from the band sets, exact Hamming distance on the stored signature, and
# (when ARGV[5] == "1") the insert, all in one atomic step: two near-identical items added
# at the same instant by two workers cannot miss each other. Signatures are stored as two
# unsigned 32-bit halves ("hi lo") because Lua 5.1's bit library works on 32 bits.
_FIND_ADD = """
local function popcount(x)
    local c = 0
    while x ~= 0 do
        x = bit.band(x, x - 1)
        c = c + 1
    end
    return c
end
local hi, lo, lim = tonumber(ARGV[2]), tonumber(ARGV[3]), tonumber(ARGV[4])
local seen, out = {}, {}
for i = 2, #KEYS do
    for _, m in ipairs(redis.call('SMEMBERS', KEYS[i])) do
        if not seen[m] and m ~= ARGV[1] then
            seen[m] = true
            local s = redis.call('HGET', KEYS[1], m)
            if s then
                local sp = string.find(s, ' ')
                local d = popcount(bit.bxor(tonumber(string.sub(s, 1, sp - 1)), hi))
                    + popcount(bit.bxor(tonumber(string.sub(s, sp + 1)), lo))
                if d <= lim then
                    table.insert(out, m)
                    table.insert(out, d)
                end
            end
        end
    end
end
if ARGV[5] == '1' then
    redis.call('HSET', KEYS[1], ARGV[1], ARGV[2] .. ' ' .. ARGV[3])
    for i = 2, #KEYS do
        redis.call('SADD', KEYS[i], ARGV[1])
    end
end
return out
"""


class NearDupIndex:
    def __init__(self, redis: Redis, namespace: str, *, bands: int = 4) -> None:
        if 64 % bands:
            raise ValueError("bands must divide 64")
        self._redis = redis
        self._prefix = f"{namespace}:nd:"
        self.bands = bands
        self._width = 64 // bands
        self._script = redis.register_script(_FIND_ADD) if redis is not None else None

    def _band_keys(self, scope: str, signature: int) -> list[str]:
        mask = (1 << self._width) - 1
        return [
            f"{self._prefix}{scope}:b{i}:{(signature >> (i * self._width)) & mask:x}"
            for i in range(self.bands)
        ]

    async def _run(
        self, scope: str, item_id: str, signature: int, max_distance: int | None, add: bool
    ) -> list[tuple[str, int]]:
        limit = self.bands - 1 if max_distance is None else max_distance
        if limit >= self.bands:
            raise ValueError(f"max_distance must be < bands ({self.bands}) to be exhaustive")
        assert self._script is not None
        sig = signature & _MASK
        raw = await self._script(
            keys=[f"{self._prefix}{scope}:sig", *self._band_keys(scope, sig)],
            args=[item_id, sig >> 32, sig & 0xFFFFFFFF, limit, "1" if add else "0"],
        )
        found = [(_s(raw[i]), int(raw[i + 1])) for i in range(0, len(raw), 2)]
        return sorted(found, key=lambda f: (f[1], f[0]))

    async def query(
        self, scope: str, signature: int, *, max_distance: int | None = None
    ) -> list[tuple[str, int]]:
        """Indexed items within ``max_distance`` bits (default ``bands - 1``), nearest first."""
        return await self._run(scope, "", signature, max_distance, add=False)

    async def add(
        self, scope: str, item_id: str, signature: int, *, max_distance: int | None = None
    ) -> list[tuple[str, int]]:
        """Index the item; return the near duplicates indexed before it (atomically)."""
        await self._redis.sadd(self.scopes_key, scope)  # type: ignore[misc]
        return await self._run(scope, item_id, signature, max_distance, add=True)

    @property
    def scopes_key(self) -> str:
        """The set of every scope an item was added to (erasure visits each)."""
        return f"{self._prefix}scopes"

    def signature_key(self, scope: str) -> str:
        return f"{self._prefix}{scope}:sig"

    def band_keys(self, scope: str, signature: int) -> list[str]:
        return self._band_keys(scope, signature)


def _s(value: bytes | str) -> str:
    return value.decode() if isinstance(value, bytes) else value
