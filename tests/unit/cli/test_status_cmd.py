"""``rlstream status`` without a running stack: one line and exit 2; with a stack whose
servers are all gone: every section marked unavailable, in the table and in --json."""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
from pathlib import Path

import pytest
from typer.testing import CliRunner

from rlstream.localstack.stackfile import ServiceEndpoint, StackFile, now, write_stack
from rlstream.services.cli.main import app

pytestmark = pytest.mark.unit


def closed_port() -> int:
    """A loopback port nothing listens on (bound, then released)."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def dead_stack(folder: Path, pid: int | None = None) -> StackFile:
    port = closed_port()
    stack = StackFile(
        pid=pid if pid is not None else os.getpid(),
        started_at=now(),
        data_dir=str(folder),
        kafka_bootstrap=f"127.0.0.1:{port}",
        postgres_dsn=f"postgresql://rlstream@127.0.0.1:{port}/rlstream",
        redis_url=f"redis://127.0.0.1:{port}/0",
        topics={"raw": "rlstream.conversations.raw", "scored": "rlstream.scored.v1"},
        services={"ingest": ServiceEndpoint(pid=os.getpid(), health_url=f"http://127.0.0.1:{port}",
                                            metrics_url=f"http://127.0.0.1:{port}/metrics")},
        consumer_groups={"ingest": "rlstream-ingest"},
        state="ready",
    )  # fmt: skip
    write_stack(stack)
    return stack


def test_no_stack_file_is_one_line_and_exit_2(tmp_path: Path) -> None:
    res = CliRunner().invoke(app, ["status", "--data-dir", str(tmp_path / "none")])
    assert res.exit_code == 2
    assert res.output.strip().startswith("error: no stack is up:")
    assert len(res.output.strip().splitlines()) == 1 and "Traceback" not in res.output


def test_a_stale_stack_file_says_the_supervisor_is_gone(tmp_path: Path) -> None:
    gone = subprocess.run([sys.executable, "-c", "import os; print(os.getpid())"],
                          capture_output=True, text=True, check=True)  # fmt: skip
    dead_stack(tmp_path, pid=int(gone.stdout))
    res = CliRunner().invoke(app, ["status", "--data-dir", str(tmp_path)])
    assert res.exit_code == 2
    assert f"supervisor (pid {int(gone.stdout)}) is gone" in res.output
    assert len(res.output.strip().splitlines()) == 1


def test_json_marks_every_unreachable_source(tmp_path: Path) -> None:
    dead_stack(tmp_path)
    res = CliRunner().invoke(
        app, ["status", "--data-dir", str(tmp_path), "--json", "--sample", "0"]
    )
    assert res.exit_code == 0, res.output
    doc = json.loads(res.output)
    for section in ("topics", "pool", "runs", "evaluations", "dead_letters"):
        assert doc[section]["unavailable"], section
    assert doc["topics"]["unavailable"].startswith("kafka: broker unreachable")
    states = {s["name"]: s for s in doc["services"]}
    assert states["kafka"]["ready"] is False and states["postgres"]["ready"] is False
    assert states["redis"]["ready"] is False
    assert states["ingest"]["reason"].startswith("health endpoint:")
    assert doc["stack_state"] == "ready" and doc["data_dir"] == str(tmp_path)
    assert len(doc["problems"]) == 4 + 5


def test_table_names_each_unavailable_section(tmp_path: Path) -> None:
    dead_stack(tmp_path)
    res = CliRunner().invoke(app, ["status", "--data-dir", str(tmp_path), "--sample", "0"],
                             env={"COLUMNS": "160"})  # fmt: skip
    assert res.exit_code == 0, res.output
    lines = res.output.splitlines()
    assert any(line.startswith("Services") for line in lines)
    assert any(line.startswith("Topics: unavailable: kafka: broker unreachable") for line in lines)
    assert any(line.startswith("Dead letters: unavailable: kafka: broker unreachable")
               for line in lines)  # fmt: skip
    assert any(line.startswith("Pool, training runs, evaluations: unavailable: cannot connect "
                               "to postgres") for line in lines)  # fmt: skip
    assert sum(line.startswith("problem: ") for line in lines) == 9
    assert lines[-1] == "9 problem(s)"
