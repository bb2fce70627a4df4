"""pass@k / pass^k / support of one group against brute force and the closed forms."""

from __future__ import annotations

import itertools
import math

import pytest
from hypothesis import given
from hypothesis import strategies as st

from rlstream.metrics.passk import (
    curves,
    pass_at_k,
    pass_hat_k,
    support,
    support_unbiased,
)

pytestmark = pytest.mark.unit


@st.composite
def group(draw: st.DrawFn, max_n: int = 9) -> tuple[int, int]:
    n = draw(st.integers(1, max_n))
    return n, draw(st.integers(0, n))


def _brute(n: int, c: int, k: int) -> tuple[float, float]:
    """Enumerate every k-subset of the group: share with >= 1 pass, share with all passes."""
    outcomes = [True] * c + [False] * (n - c)
    subsets = list(itertools.combinations(range(n), k))
    any_pass = sum(any(outcomes[i] for i in s) for s in subsets) / len(subsets)
    all_pass = sum(all(outcomes[i] for i in s) for s in subsets) / len(subsets)
    return any_pass, all_pass


@given(group(), st.data())
def test_matches_subset_enumeration(g: tuple[int, int], data: st.DataObject) -> None:
    n, c = g
    k = data.draw(st.integers(1, n))
    any_pass, all_pass = _brute(n, c, k)
    assert pass_at_k(n, c, k) == pytest.approx(any_pass, abs=1e-12)
    assert pass_hat_k(n, c, k) == pytest.approx(all_pass, abs=1e-12)


@given(group(max_n=40))
def test_curves_agree_with_scalars_and_are_monotone(g: tuple[int, int]) -> None:
    n, c = g
    at, hat = curves(n, c, n)
    assert len(at) == len(hat) == n
    for k in range(1, n + 1):
        assert at[k - 1] == pytest.approx(pass_at_k(n, c, k), abs=1e-12)
        assert hat[k - 1] == pytest.approx(pass_hat_k(n, c, k), abs=1e-12)
        assert 0.0 <= at[k - 1] <= 1.0 and 0.0 <= hat[k - 1] <= 1.0
    assert all(b >= a - 1e-12 for a, b in itertools.pairwise(at))
    assert all(b <= a + 1e-12 for a, b in itertools.pairwise(hat))
    assert at[0] == pytest.approx(c / n) == pytest.approx(hat[0])


def test_stable_for_large_groups() -> None:
    # C(2000, 1000) overflows a float; the product form does not
    assert pass_at_k(2000, 3, 1000) == pytest.approx(
        1 - math.comb(1997, 1000) / math.comb(2000, 1000)
    )
    assert 0.0 < pass_hat_k(2000, 1990, 500) < 1.0


@given(group(max_n=50).filter(lambda g: g[0] >= 2))
def test_unbiased_is_plain_times_n_over_n_minus_1(g: tuple[int, int]) -> None:
    n, c = g
    assert 0.0 <= support(n, c) <= 1.0
    assert support_unbiased(n, c) == pytest.approx(support(n, c) * n / (n - 1))


def test_rejects_k_outside_group() -> None:
    with pytest.raises(ValueError):
        pass_at_k(3, 1, 4)
    with pytest.raises(ValueError):
        pass_hat_k(3, 4, 1)
