"""The trainer service's exit codes for bad configuration (2: never retried by the Job)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

pytestmark = pytest.mark.unit


def _run(*args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("RLSTREAM_")}
    env["RLSTREAM_LOG_JSON"] = "false"
    return subprocess.run(
        [sys.executable, "-m", "rlstream.services.trainer", *args],
        capture_output=True, text=True, env=env, cwd=cwd, timeout=120,
    )  # fmt: skip


def test_usage_error_exits_2(tmp_path: Path) -> None:
    res = _run("--dataset", str(tmp_path), cwd=tmp_path)
    assert res.returncode == 2 and "--run-id" in res.stderr


def test_missing_dataset_exits_2_without_a_traceback(tmp_path: Path) -> None:
    res = _run("--run-id", "r1", "--dataset", str(tmp_path / "nope"), cwd=tmp_path)
    out = res.stdout + res.stderr
    assert res.returncode == 2, out
    assert "bad configuration" in out and "Traceback" not in out
    assert not (tmp_path / ".rlstream").exists()  # nothing started before the check


def test_bad_train_config_json_exits_2(tmp_path: Path) -> None:
    res = _run("--run-id", "r1", "--dataset", str(tmp_path), "--config", "[1]", cwd=tmp_path)
    assert res.returncode == 2 and "bad configuration" in res.stdout + res.stderr
