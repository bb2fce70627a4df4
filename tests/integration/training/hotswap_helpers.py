"""Builders for the hot-swap tests (a uniquely named module: test dirs have no __init__.py):
a real ``rlstream serve`` process; the adapters come from rlstream_testkit.adapters."""

from __future__ import annotations

import socket
import subprocess
import sys
import time
from pathlib import Path

import httpx

from rlstream_testkit.adapters import corrupt_adapter, make_adapter

__all__ = ["corrupt_adapter", "make_adapter", "start_server", "stop_server"]


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def start_server(base: Path, model_id: str, *extra: str) -> tuple[subprocess.Popen[bytes], str]:
    """``rlstream serve BASE --model-id ID --no-log``, ready (or a failure with its output)."""
    port = _free_port()
    cmd = [sys.executable, "-m", "rlstream.services.cli.main", "serve", str(base)]
    cmd += ["--model-id", model_id, "--port", str(port), "--no-log", *extra]
    proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
    url = f"http://127.0.0.1:{port}"
    deadline = time.monotonic() + 180
    while True:
        assert proc.poll() is None, proc.stdout.read().decode() if proc.stdout else ""
        try:
            if httpx.get(url + "/readyz", timeout=2).status_code == 200:
                return proc, url
        except httpx.TransportError:
            pass
        assert time.monotonic() < deadline, "server not ready in 180 s"
        time.sleep(0.5)


def stop_server(proc: subprocess.Popen[bytes]) -> None:
    proc.terminate()
    try:
        proc.wait(30)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.wait(10)
