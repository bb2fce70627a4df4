"""A 'seen before?' set whose memory does not grow with the input.

Ingest dedupes conversation ids and counts task-key groups over whole runs, possibly over
many GB. A Python ``set`` costs ~70 bytes per key, so memory grew with the input. Here a
fixed-size Bloom filter answers "definitely new" for almost every key without disk access; only its
rare "maybe seen" answers consult the exact store, a temporary on-disk SQLite table that
new fingerprints are flushed to in batches. Memory is the filter (allocated lazily) plus
SQLite's bounded page cache, whatever the input size. Keys are compared by a blake2b-64
fingerprint: a false "seen" needs a 64-bit collision.
"""

from __future__ import annotations

import hashlib
import sqlite3

#: the filter starts small and grows x4 (rebuilt from the exact store) up to 2**26 bits =
#: 8 MiB: ~0.5% false "maybe" at 5M keys; beyond that the exact store answers more often
START_BLOOM_BITS = 1 << 17
MAX_BLOOM_BITS = 1 << 26
BITS_PER_KEY = 13
PROBES = 4
FLUSH_EVERY = 4096


def fingerprint(key: str) -> int:
    """Stable signed 64-bit fingerprint (the same in every process, unlike ``hash``)."""
    return int.from_bytes(
        hashlib.blake2b(key.encode(), digest_size=8).digest(), "little", signed=True
    )


class CompactSeenSet:
    """Add-and-test set of string keys in bounded memory."""

    def __init__(self, bloom_bits: int = START_BLOOM_BITS, max_bits: int = MAX_BLOOM_BITS) -> None:
        if bloom_bits & (bloom_bits - 1) or max_bits & (max_bits - 1):
            raise ValueError("bloom_bits and max_bits must be powers of two")
        self._max_bits = max(max_bits, bloom_bits)
        self._alloc(bloom_bits)
        self._pending: set[int] = set()
        self._count = 0
        self._db: sqlite3.Connection | None = None
        self.exact_lookups = 0

    def __len__(self) -> int:
        return self._count

    def __contains__(self, key: str) -> bool:
        fp = fingerprint(key)
        return self._maybe(fp) and self._exact(fp)

    def add(self, key: str) -> bool:
        """Add ``key``; True when it was new, False when it had been seen."""
        fp = fingerprint(key)
        if self._maybe(fp) and self._exact(fp):
            return False
        self._set(fp)
        self._pending.add(fp)
        self._count += 1
        if len(self._pending) >= FLUSH_EVERY:
            self._flush()
        if self._count * BITS_PER_KEY > self._mask + 1 and self._mask + 1 < self._max_bits:
            self._grow()
        return True

    def close(self) -> None:
        if self._db is not None:
            self._db.close()
            self._db = None

    def _alloc(self, nbits: int) -> None:
        self._mask = nbits - 1
        self._bits = bytearray(nbits // 8)

    def _grow(self) -> None:
        """x4 the filter and re-add every key (from the exact store): amortised O(1)."""
        self._flush()
        assert self._db is not None
        self._alloc(min((self._mask + 1) * 4, self._max_bits))
        for (fp,) in self._db.execute("SELECT fp FROM seen"):
            self._set(fp)

    def _positions(self, fp: int) -> list[int]:
        h1, h2 = fp & 0xFFFFFFFF, (fp >> 32) | 1
        return [(h1 + i * h2) & self._mask for i in range(PROBES)]

    def _maybe(self, fp: int) -> bool:
        bits = self._bits
        return all(bits[p >> 3] & (1 << (p & 7)) for p in self._positions(fp))

    def _set(self, fp: int) -> None:
        bits = self._bits
        for p in self._positions(fp):
            bits[p >> 3] |= 1 << (p & 7)

    def _exact(self, fp: int) -> bool:
        if fp in self._pending:
            return True
        if self._db is None:
            return False
        self.exact_lookups += 1
        row = self._db.execute("SELECT 1 FROM seen WHERE fp = ?", (fp,)).fetchone()
        return row is not None

    def _flush(self) -> None:
        if self._db is None:
            # "" = a private temporary database on disk, removed when closed
            self._db = sqlite3.connect("", isolation_level=None, check_same_thread=False)
            for pragma in ("journal_mode=OFF", "synchronous=OFF", "cache_size=-2048"):
                self._db.execute(f"PRAGMA {pragma}")
            self._db.execute("CREATE TABLE seen (fp INTEGER PRIMARY KEY) WITHOUT ROWID")
        self._db.executemany(
            "INSERT OR IGNORE INTO seen VALUES (?)", ((fp,) for fp in self._pending)
        )
        self._pending.clear()

    def __del__(self) -> None:
        self.close()
