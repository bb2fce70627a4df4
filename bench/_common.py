"""Shared helpers for the benchmarks: timing, tables, seeded sample data.

Benchmarks time CPU seconds of this process (``time.process_time``) next to wall seconds:
the bench machine is shared, and CPU time of a single-threaded process is what "per core"
means. BLAS/OpenMP pools are pinned to one thread before numpy loads so that CPU time is
one core's time.
"""

from __future__ import annotations

import gc
import os
import platform
import statistics
import subprocess
import sys
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

for _var in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS", "NUMEXPR_NUM_THREADS"):
    os.environ.setdefault(_var, "1")

ROOT = Path(__file__).resolve().parents[1]


@dataclass(frozen=True)
class Timing:
    """Best-of-N timing of one callable: CPU and wall seconds of the fastest repeat."""

    cpu_s: float
    wall_s: float
    repeats: int
    result: Any = None

    def rate(self, n: int) -> float:
        """Items per CPU second (one core), guarding against a zero-length clock tick."""
        return n / max(self.cpu_s, 1e-9)


def measure(fn: Callable[[], Any], *, repeats: int = 3, min_cpu_s: float = 0.0) -> Timing:
    """Run ``fn`` ``repeats`` times (at least once) and keep the fastest CPU time.

    The minimum is the least-disturbed run on a shared machine; the garbage collector is
    collected before each run and disabled during it so one side does not pay for the
    other's garbage.
    """
    best_cpu = best_wall = float("inf")
    result: Any = None
    runs = 0
    spent = 0.0
    while runs < max(1, repeats) or spent < min_cpu_s:
        gc.collect()
        gc.disable()
        try:
            c0, w0 = time.process_time(), time.perf_counter()
            result = fn()
            c1, w1 = time.process_time(), time.perf_counter()
        finally:
            gc.enable()
        runs += 1
        spent += c1 - c0
        best_cpu = min(best_cpu, c1 - c0)
        best_wall = min(best_wall, w1 - w0)
    return Timing(cpu_s=best_cpu, wall_s=best_wall, repeats=runs, result=result)


def print_table(headers: Sequence[str], rows: Sequence[Sequence[object]]) -> None:
    """A plain aligned table (no rich: bench output is pasted into READMEs and reports)."""
    cells = [[_fmt(c) for c in row] for row in rows]
    widths = [
        max(len(h), *(len(r[i]) for r in cells)) if cells else len(h) for i, h in enumerate(headers)
    ]
    line = "  ".join(h.ljust(w) for h, w in zip(headers, widths, strict=True))
    print(line)
    print("  ".join("-" * w for w in widths))
    for row in cells:
        print(
            "  ".join(
                c.rjust(w) if _numeric(c) else c.ljust(w) for c, w in zip(row, widths, strict=True)
            )
        )


def _fmt(value: object) -> str:
    if isinstance(value, float):
        if value == 0:
            return "0"
        if abs(value) >= 100:
            return f"{value:,.0f}"
        if abs(value) >= 1:
            return f"{value:.2f}"
        return f"{value:.4f}"
    if isinstance(value, int):
        return f"{value:,}"
    return str(value)


def _numeric(cell: str) -> bool:
    return bool(cell) and (cell[0].isdigit() or cell[0] in "-+.") and cell[-1] not in ":"


def environment_line() -> str:
    """One line naming interpreter and peers, printed at the top of every bench."""
    versions = []
    for dist in ("rlstream", "stateset-agents", "whileai", "pydantic", "numpy"):
        try:
            from importlib.metadata import version

            versions.append(f"{dist} {version(dist)}")
        except Exception:
            versions.append(f"{dist} (absent)")
    return (
        f"python {platform.python_version()} on {platform.machine()}, {os.cpu_count()} cpus; "
        + ", ".join(versions)
    )


def header(title: str) -> None:
    print(f"# {title}")
    print(f"# {environment_line()}")
    print(f"# argv: {' '.join(sys.argv)}")


def median(values: Sequence[float]) -> float:
    return statistics.median(values) if values else float("nan")


def demo_dataset(folder: Path) -> Path:
    """``rlstream demo --quick`` into ``folder`` (sample logs of every format, graded and
    curated in seconds); returns the released dataset directory."""
    cmd = [
        sys.executable,
        "-m",
        "rlstream.services.cli.main",
        "demo",
        "--quick",
        "--dir",
        str(folder),
    ]
    subprocess.run(cmd, check=True, capture_output=True)
    return folder / "out" / "dataset"


def matmul_rate(rows: int = 256, dim: int = 576, out: int = 1536, repeats: int = 20) -> float:
    """Float32 FLOP/s of a torch matmul shaped like a small model's MLP over a batch of
    tokens, best of ``repeats``, at torch's current thread count: the arithmetic floor's
    denominator (model FLOPs / this rate = the least time the machine can take)."""
    import torch

    a, b = torch.randn(rows, dim), torch.randn(dim, out)
    torch.matmul(a, b)  # warm-up
    best = float("inf")
    for _ in range(repeats):
        t0 = time.perf_counter()
        for _ in range(10):
            torch.matmul(a, b)
        best = min(best, (time.perf_counter() - t0) / 10)
    return 2 * rows * dim * out / best


def linear_flops_per_token(model: Any) -> float:
    """2 x the weights of every ``torch.nn.Linear`` (LM head and LoRA layers included): a
    token's forward FLOPs, leaving out attention scores and norms."""
    import torch

    return float(
        2 * sum(m.weight.numel() for m in model.modules() if isinstance(m, torch.nn.Linear))
    )
