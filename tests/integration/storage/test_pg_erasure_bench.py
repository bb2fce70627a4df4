"""bench/erase.py runs end to end at a tiny size on its own servers and prints its summary."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

pytestmark = [pytest.mark.postgres, pytest.mark.redis]

ROOT = Path(__file__).resolve().parents[3]


def test_the_erase_bench_prints_time_and_counts() -> None:
    out = subprocess.run(
        [sys.executable, str(ROOT / "bench" / "erase.py"), "--n", "600", "--small", "300",
         "--write-cost", "200"],
        capture_output=True, text=True, timeout=600, env={**os.environ},
    )  # fmt: skip
    assert out.returncode == 0, out.stdout[-2000:] + out.stderr[-2000:]
    lines = out.stdout.splitlines()
    summary = lines[lines.index("summary:") + 1 :]
    assert len(summary) == 2 and all(
        "5 conversations, 5 rollouts (5 released)" in s for s in summary
    )
    assert "  match: " in out.stdout and "  rollouts: " in out.stdout
    assert "conversations/s stored" in out.stdout
