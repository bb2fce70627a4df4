"""Exact and near-duplicate detection inside a group.

Identical rollouts carry no contrast; near duplicates (MinHash Jaccard >= ~0.8 over word
shingles of the normalised assistant text plus tool calls) over-weight one behaviour.
Near duplicates with *different* outcomes are kept: a minimal pass/fail pair is exactly
the contrast DPO and GRPO learn from.
"""

from __future__ import annotations

import hashlib
from collections.abc import Sequence
from functools import lru_cache

import numpy as np
import numpy.typing as npt

from rlstream.metrics.features import assistant_text, normalise_text, tool_signature
from rlstream.transcript import Transcript

_PRIME = np.uint64((1 << 61) - 1)
_EMPTY = np.uint64((1 << 61) - 1)
Signature = npt.NDArray[np.uint64]


@lru_cache(maxsize=8)
def _coefficients(permutations: int) -> tuple[Signature, Signature]:
    """Fixed-seed hash family: a stored index stays comparable across runs."""
    rng = np.random.default_rng(0x5EED)
    a = rng.integers(1, 1 << 31, size=permutations, dtype=np.uint64)
    b = rng.integers(0, 1 << 31, size=permutations, dtype=np.uint64)
    return a, b


def tokens(t: Transcript) -> list[str]:
    """Normalised assistant words, then one token per tool call (name + canonical args)."""
    words = normalise_text(assistant_text(t)).split()
    return words + [f"<call:{name}:{args}>" for name, args in tool_signature(t)]


def shingles(toks: Sequence[str], size: int) -> set[str]:
    if not toks:
        return set()
    if len(toks) < size:
        return {" ".join(toks)}
    return {" ".join(toks[i : i + size]) for i in range(len(toks) - size + 1)}


def minhash(t: Transcript, *, permutations: int = 128, shingle_size: int = 3) -> Signature:
    """MinHash signature: min over shingles of (a*h + b) mod (2^61 - 1), h a 32-bit hash."""
    items = shingles(tokens(t), shingle_size)
    if not items:
        return np.full(permutations, _EMPTY, dtype=np.uint64)
    hv = np.array(
        [int.from_bytes(hashlib.blake2b(s.encode(), digest_size=4).digest(), "big") for s in items],
        dtype=np.uint64,
    )
    a, b = _coefficients(permutations)
    sig: Signature = ((hv[:, None] * a[None, :] + b[None, :]) % _PRIME).min(axis=0)
    return sig


def jaccard(a: Signature, b: Signature) -> float:
    """Estimated Jaccard similarity: the share of equal signature slots."""
    return float(np.mean(a == b))


def near_duplicates(
    sigs: Sequence[Signature], outcomes: Sequence[bool], threshold: float
) -> list[int | None]:
    """For each item, the index of an earlier kept item it near-duplicates (same outcome).

    Greedy in the given order, so the caller's (sorted) order decides who is kept.
    """
    kept: list[int] = []
    out: list[int | None] = []
    for i, sig in enumerate(sigs):
        match = next(
            (j for j in kept if outcomes[j] == outcomes[i] and jaccard(sigs[j], sig) >= threshold),
            None,
        )
        out.append(match)
        if match is None:
            kept.append(i)
    return out
