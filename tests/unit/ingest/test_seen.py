"""CompactSeenSet behaves like a set, in memory that does not grow with the keys."""

from __future__ import annotations

import tracemalloc
from collections.abc import Callable

import pytest
from hypothesis import given
from hypothesis import strategies as st

from rlstream.ingest import seen as seen_mod
from rlstream.ingest.seen import CompactSeenSet, fingerprint

pytestmark = pytest.mark.unit


@given(st.lists(st.text(max_size=8), max_size=300))
def test_matches_a_python_set_even_with_a_saturated_filter(keys: list[str]) -> None:
    # 64 bits of filter: nearly every lookup is a "maybe", so the exact store decides
    compact, plain = CompactSeenSet(bloom_bits=64, max_bits=64), set()
    for k in keys:
        assert compact.add(k) == (k not in plain)
        plain.add(k)
    assert len(compact) == len(plain)
    assert all(k in compact for k in plain)


def test_flushes_to_the_exact_store_and_still_answers(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(seen_mod, "FLUSH_EVERY", 100)
    s = CompactSeenSet(bloom_bits=1 << 12, max_bits=1 << 12)
    keys = [f"conv-{i}" for i in range(5_000)]
    assert all(s.add(k) for k in keys)
    assert not any(s.add(k) for k in keys)  # answered from SQLite after flushes
    assert s.exact_lookups > 0
    assert "conv-nope" not in s


def test_filter_grows_and_keeps_every_key() -> None:
    s = CompactSeenSet(bloom_bits=1 << 10, max_bits=1 << 16)
    keys = [f"k-{i}" for i in range(6_000)]
    assert all(s.add(k) for k in keys)
    assert len(s._bits) * 8 == 1 << 16
    assert not any(s.add(k) for k in keys)


def _heap_growth_kb(add: Callable[[str], object]) -> int:
    """Peak Python-heap growth (KiB) while 150,000 new keys go through ``add``.

    tracemalloc, not ru_maxrss: the test process's peak RSS may already be above anything the
    set allocates (and a child process inherits its parent's peak), so RSS would not move.
    """
    tracemalloc.start()
    try:
        tracemalloc.reset_peak()
        before, _ = tracemalloc.get_traced_memory()
        for i in range(150_000):
            add(f"conv-{i}")
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    return (peak - before) // 1024


def test_memory_does_not_grow_with_keys() -> None:
    s = CompactSeenSet(bloom_bits=1 << 26)
    for i in range(20_000):
        s.add(f"warm-{i}")
    grown_kb = _heap_growth_kb(s.add)
    assert grown_kb < 2 * 1024, grown_kb
    assert s.exact_lookups < 1_500  # the filter answers almost every new key alone


def test_the_memory_measure_sees_a_growing_set() -> None:
    # The measure must be able to fail: it catches a plain set of the same keys.
    keys: set[str] = set()
    assert _heap_growth_kb(keys.add) > 8 * 1024


def test_fingerprint_is_stable_across_processes() -> None:
    assert fingerprint("abc") == int.from_bytes(
        bytes.fromhex("d8bb14d833d59559"), "little", signed=True
    )
    assert fingerprint("abc") != fingerprint("abd")
