"""run_live_view as rlstream up calls it: on a thread of its own, ending when ``stop`` is
set, and never raising (settings that do not load are one line, not a dead thread)."""

from __future__ import annotations

import io
import os
import socket
import threading
import time
from pathlib import Path

import pytest
from rich.console import Console

from rlstream.localstack.stackfile import StackFile, now
from rlstream.stackstatus.live import run_live_view

pytestmark = pytest.mark.unit


def _stack(tmp_path: Path) -> StackFile:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = int(s.getsockname()[1])
    return StackFile(
        pid=os.getpid(), started_at=now(), data_dir=str(tmp_path),
        kafka_bootstrap=f"127.0.0.1:{port}", postgres_dsn=f"postgresql://x@127.0.0.1:{port}/x",
        redis_url=f"redis://127.0.0.1:{port}/0", topics={"raw": "rlstream.conversations.raw"},
    )  # fmt: skip


def test_runs_on_a_thread_redraws_and_stops_when_asked(tmp_path: Path) -> None:
    buf = io.StringIO()
    console = Console(file=buf, force_terminal=True, width=120)
    stop = threading.Event()
    th = threading.Thread(
        target=run_live_view, args=(_stack(tmp_path), stop),
        kwargs={"console": console, "refresh_s": 0.2}, daemon=True,
    )  # fmt: skip
    th.start()
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline and buf.getvalue().count("Services") < 2:
        time.sleep(0.1)
    stop.set()
    th.join(15)
    assert not th.is_alive()
    assert buf.getvalue().count("Services") >= 2  # drawn, then drawn again
    assert "Topics: " in buf.getvalue() and "unavailable" in buf.getvalue()


def test_settings_that_do_not_load_are_one_line(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("RLSTREAM_NO_SUCH_SETTING", "1")
    buf = io.StringIO()
    run_live_view(_stack(tmp_path), threading.Event(), console=Console(file=buf, width=200))
    out = buf.getvalue().strip()
    assert out.startswith("rlstream up: no live view:") and "RLSTREAM_NO_SUCH_SETTING" in out
    assert len(out.splitlines()) == 1
