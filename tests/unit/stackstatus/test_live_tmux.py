"""The live view in a real terminal (tmux): it draws every section, marks what it cannot
reach, keeps redrawing, and ends on Ctrl-C with status 0 and no traceback."""

from __future__ import annotations

import os
import shutil
import socket
import sys
from pathlib import Path

import pytest

from rlstream.localstack.stackfile import ServiceEndpoint, StackFile, now, write_stack
from rlstream_testkit.tmux import tmux_pane

pytestmark = [
    pytest.mark.unit,
    pytest.mark.skipif(shutil.which("tmux") is None, reason="tmux is not installed"),
]

SECTIONS = ("Services", "Topics:", "Pool, training runs, evaluations:", "Dead letters:")


def _closed_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def test_live_view_renders_unreachable_stack_and_stops_on_ctrl_c(tmp_path: Path) -> None:
    port = _closed_port()
    write_stack(StackFile(
        pid=os.getpid(), started_at=now(), data_dir=str(tmp_path),
        kafka_bootstrap=f"127.0.0.1:{port}",
        postgres_dsn=f"postgresql://rlstream@127.0.0.1:{port}/rlstream",
        redis_url=f"redis://127.0.0.1:{port}/0",
        topics={"raw": "rlstream.conversations.raw"},
        services={"ingest": ServiceEndpoint(pid=os.getpid(), health_url=f"http://127.0.0.1:{port}",
                                            metrics_url=f"http://127.0.0.1:{port}/metrics")},
        consumer_groups={"ingest": "rlstream-ingest"}, state="ready",
    ))  # fmt: skip
    argv = [sys.executable, "-m", "rlstream.services.cli.main", "status", "--watch",
            "--data-dir", str(tmp_path)]  # fmt: skip
    with tmux_pane(argv) as pane:
        first = pane.wait_for(lambda t: all(s in t for s in SECTIONS), timeout=90)
        assert "unavailable: kafka: broker unreachable" in first
        assert "unreachable" in first and "ingest" in first
        # it redraws: the clock in the header moves on
        stamp = first.split(" at ", 1)[1].split()[0]
        pane.wait_for(lambda t: " at " in t and t.split(" at ", 1)[1].split()[0] != stamp, 30)
        pane.keys("C-c")
        last = pane.wait_for(lambda t: "EXITED" in t, timeout=30)
    assert "EXITED 0" in last, last
    assert "Traceback" not in last and "status failed" not in last, last
