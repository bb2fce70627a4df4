"""bench/train_throughput.py reaches its verdict and floor lines with figures (at a tiny
size; the numbers themselves are not asserted: a shared CI core says nothing about
throughput)."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

pytestmark = pytest.mark.train

ROOT = Path(__file__).resolve().parents[3]


def test_throughput_bench_prints_the_ratio(base_model: Path, demo_dataset: Path) -> None:
    proc = subprocess.run(
        [
            sys.executable, str(ROOT / "bench" / "train_throughput.py"), "--dataset",
            str(demo_dataset), "--steps", "1", "--batch-size", "1", "--max-length", "96",
        ],
        capture_output=True, text=True, timeout=280, cwd=ROOT, env=dict(os.environ), check=False,
    )  # fmt: skip
    assert proc.returncode == 0, proc.stderr[-4000:]
    *_, verdict, floor = proc.stdout.strip().splitlines()
    assert re.search(r"rlstream/trl \d+\.\d+x .*trl/loop \d+\.\d+x", verdict), proc.stdout
    # the floor line: FLOPs per token x tokens / measured matmul rate, and the share of it
    assert re.search(
        r"floor \(LoRA.*\): \d+\.\d+ GFLOP/token x [\d,]+ tokens needed / \d+\.\d GFLOP/s "
        r"matmul = .* tokens/s; measured .* = \d+\.\d% of the floor's rate \(rlstream arm",
        floor,
    ), proc.stdout
