"""pass@k, pass^k and gradient support for one group, in numerically stable forms.

pass@k = 1 - C(n-c, k)/C(n, k) (Chen et al. 2021); pass^k = C(c, k)/C(n, k) (τ-bench).
Both ratios are running products of factors in [0, 1], so they never overflow, unlike the
binomials themselves.
"""

from __future__ import annotations

import numpy as np
import numpy.typing as npt

FloatArray = npt.NDArray[np.float64]


def pass_at_k(n: int, c: int, k: int) -> float:
    """Unbiased pass@k of a group with ``c`` passes out of ``n`` (requires 1 <= k <= n)."""
    if not 1 <= k <= n or not 0 <= c <= n:
        raise ValueError(f"need 1 <= k <= n and 0 <= c <= n, got n={n} c={c} k={k}")
    if n - c < k:
        return 1.0
    prod = 1.0
    for i in range(n - c + 1, n + 1):
        prod *= 1.0 - k / i
    return 1.0 - prod


def pass_hat_k(n: int, c: int, k: int) -> float:
    """pass^k: the chance that k draws without replacement all pass."""
    if not 1 <= k <= n or not 0 <= c <= n:
        raise ValueError(f"need 1 <= k <= n and 0 <= c <= n, got n={n} c={c} k={k}")
    if c < k:
        return 0.0
    prod = 1.0
    for j in range(k):
        prod *= (c - j) / (n - j)
    return prod


def curves(n: int, c: int, k_max: int) -> tuple[FloatArray, FloatArray]:
    """pass@k and pass^k for k = 1..min(n, k_max) of one (n, c) group, as arrays.

    Uses C(m,k+1)/C(n,k+1) = C(m,k)/C(n,k) * (m-k)/(n-k), so one cumulative product per
    curve gives every k.
    """
    top = min(n, k_max)
    j = np.arange(top, dtype=np.float64)
    fail_ratio: FloatArray = np.cumprod(np.clip((n - c - j) / (n - j), 0.0, 1.0), dtype=np.float64)
    pass_ratio: FloatArray = np.cumprod(np.clip((c - j) / (n - j), 0.0, 1.0), dtype=np.float64)
    return 1.0 - fail_ratio, pass_ratio


def support(n: int, c: int) -> float:
    """p(1-p)/0.25 for a group of n >= 2 (the plug-in form; reads low for small n)."""
    p = c / n
    return p * (1.0 - p) / 0.25


def support_unbiased(n: int, c: int) -> float:
    """c(n-c)/(n(n-1)) / 0.25 = plug-in x n/(n-1): unbiased for p(1-p) (VCRL)."""
    return c * (n - c) / (n * (n - 1)) / 0.25
