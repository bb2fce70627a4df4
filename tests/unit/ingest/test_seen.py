"""CompactSeenSet behaves like a set across folds, at ~8 bytes per key."""

from __future__ import annotations

import random

import pytest
from hypothesis import given
from hypothesis import strategies as st

from rlstream.ingest.seen import CompactSeenSet, fingerprint

pytestmark = pytest.mark.unit


@given(st.lists(st.text(max_size=8), max_size=300))
def test_matches_a_python_set(keys: list[str]) -> None:
    compact, plain = CompactSeenSet(buffer_size=7), set()
    for k in keys:
        assert compact.add(k) == (k not in plain)
        plain.add(k)
    assert len(compact) == len(plain)
    assert all(k in compact for k in plain)


def test_folds_into_few_sorted_levels() -> None:
    s = CompactSeenSet(buffer_size=1000)
    keys = [f"conv-{i}" for i in range(20_000)]
    random.Random(1).shuffle(keys)
    assert all(s.add(k) for k in keys)
    assert not any(s.add(k) for k in keys[:500])
    assert "conv-nope" not in s
    levels = s._levels
    assert sum(level.size for level in levels) + len(s._recent) == 20_000
    assert len(levels) <= 5  # binary-counter merging keeps the level count logarithmic
    assert all(level.dtype.itemsize == 8 for level in levels)


def test_fingerprint_is_stable_across_processes() -> None:
    assert fingerprint("abc") == 0x5995D533D814BBD8  # blake2b-64, little endian: no salt
    assert fingerprint("abc") == fingerprint("abc") != fingerprint("abd")
