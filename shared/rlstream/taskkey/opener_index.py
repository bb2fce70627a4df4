"""Near-duplicate opener merging for streams: MinHash + LSH banding, exact Jaccard check.

``add(opener_key, text, context)`` returns the key of the group the opener joins: its own
exact key when nothing similar was seen, else the key of the first similar opener in the
same context (system prompt + tool set). Candidates come from LSH buckets, so an add is
O(candidates), not O(groups); the Jaccard similarity of content-word shingles (unigrams +
bigrams) then decides, so a bucket collision never merges two different tasks.
"""

from __future__ import annotations

import hashlib
import itertools
import random
from dataclasses import dataclass, field

from rlstream.taskkey.normalize import content_tokens

_PRIME = 4294967311  # > 2**32


def shingles(normalised: str) -> frozenset[str]:
    toks = content_tokens(normalised)
    return frozenset(toks) | frozenset(f"{a} {b}" for a, b in itertools.pairwise(toks))


def jaccard(a: frozenset[str], b: frozenset[str]) -> float:
    if not a and not b:
        return 1.0
    return len(a & b) / len(a | b)


@dataclass
class _Rep:
    key: str
    shingles: frozenset[str]


@dataclass
class OpenerIndex:
    """In-memory index; one per ingest run or per service replica."""

    threshold: float = 0.7
    num_perm: int = 64
    bands: int = 16
    seed: int = 1
    _coeffs: list[tuple[int, int]] = field(init=False, repr=False)
    _buckets: dict[tuple[str, int, tuple[int, ...]], list[_Rep]] = field(
        default_factory=dict, init=False, repr=False
    )
    _assigned: dict[str, str] = field(default_factory=dict, init=False, repr=False)

    def __post_init__(self) -> None:
        if not 0.0 < self.threshold <= 1.0:
            raise ValueError("threshold must be in (0, 1]")
        if self.num_perm % self.bands:
            raise ValueError("num_perm must be a multiple of bands")
        rng = random.Random(self.seed)
        self._coeffs = [
            (rng.randrange(1, 2**32), rng.randrange(0, 2**32)) for _ in range(self.num_perm)
        ]

    def _signature(self, sh: frozenset[str]) -> list[int]:
        hashes = [
            int.from_bytes(hashlib.blake2b(s.encode(), digest_size=4).digest(), "big") for s in sh
        ]
        return [min((a * x + b) % _PRIME for x in hashes) for a, b in self._coeffs]

    def add(self, key: str, normalised: str, context: str = "") -> str:
        """Key of the group this opener belongs to (``key`` itself when it starts one)."""
        known = self._assigned.get(key)
        if known is not None:
            return known
        sh = shingles(normalised)
        if not sh:
            self._assigned[key] = key
            return key
        sig = self._signature(sh)
        rows = self.num_perm // self.bands
        band_keys = [(context, i, tuple(sig[i * rows : (i + 1) * rows])) for i in range(self.bands)]
        best: _Rep | None = None
        best_sim = self.threshold
        seen: set[int] = set()
        for bk in band_keys:
            for rep in self._buckets.get(bk, ()):
                if id(rep) in seen:
                    continue
                seen.add(id(rep))
                sim = jaccard(sh, rep.shingles)
                if sim >= best_sim and (best is None or sim > best_sim):
                    best, best_sim = rep, sim
        if best is not None:
            self._assigned[key] = best.key
            return best.key
        rep = _Rep(key, sh)
        for bk in band_keys:
            self._buckets.setdefault(bk, []).append(rep)
        self._assigned[key] = key
        return key

    def __len__(self) -> int:
        return len(self._assigned)
