"""Near-duplicate index on Redis: 64-bit SimHash signatures bucketed by bands.

A signature is split into ``bands`` equal bit-bands; each band value names a Redis set of
item ids. Two signatures within Hamming distance ``bands - 1`` share at least one band
(pigeonhole), so candidates come from a few set reads and the exact distance is checked
in Python. Scoped (e.g. per agent and task key) so unrelated items never collide.
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


class NearDupIndex:
    def __init__(self, redis: Redis, namespace: str, *, bands: int = 4) -> None:
        if 64 % bands:
            raise ValueError("bands must divide 64")
        self._redis = redis
        self._prefix = f"{namespace}:nd:"
        self.bands = bands
        self._width = 64 // bands

    def _band_keys(self, scope: str, signature: int) -> list[str]:
        mask = (1 << self._width) - 1
        return [
            f"{self._prefix}{scope}:b{i}:{(signature >> (i * self._width)) & mask:x}"
            for i in range(self.bands)
        ]

    async def query(
        self, scope: str, signature: int, *, max_distance: int | None = None
    ) -> list[tuple[str, int]]:
        """Indexed items within ``max_distance`` bits (default ``bands - 1``), nearest first."""
        limit = self.bands - 1 if max_distance is None else max_distance
        if limit >= self.bands:
            raise ValueError(f"max_distance must be < bands ({self.bands}) to be exhaustive")
        candidates = await self._redis.sunion(self._band_keys(scope, signature))  # type: ignore[misc]
        if not candidates:
            return []
        ids = sorted(_s(c) for c in candidates)
        sigs = await self._redis.hmget(f"{self._prefix}{scope}:sig", ids)  # type: ignore[misc]
        found = [
            (i, hamming(signature, int(_s(s))))
            for i, s in zip(ids, sigs, strict=True)
            if s is not None
        ]
        return sorted([f for f in found if f[1] <= limit], key=lambda f: (f[1], f[0]))

    async def add(
        self, scope: str, item_id: str, signature: int, *, max_distance: int | None = None
    ) -> list[tuple[str, int]]:
        """Index the item; return the near duplicates that were indexed before it.

        Not atomic across concurrent adders: two near-identical items added at the same
        instant may miss each other (the curator's in-group dedupe catches that case).
        """
        near = [n for n in await self.query(scope, signature, max_distance=max_distance)]
        near = [n for n in near if n[0] != item_id]
        pipe = self._redis.pipeline(transaction=True)
        pipe.hset(f"{self._prefix}{scope}:sig", item_id, str(signature & _MASK))
        for key in self._band_keys(scope, signature):
            pipe.sadd(key, item_id)
        await pipe.execute()
        return near


def _s(value: bytes | str) -> str:
    return value.decode() if isinstance(value, bytes) else value
