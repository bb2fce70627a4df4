"""``rlstream up`` without servers: a missing Java is one line naming it and how to get it;
the stack file (the contract with ``rlstream status``) round-trips and a bad one is one line."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import orjson
import pytest

from rlstream.localstack.stackfile import read_stack

pytestmark = pytest.mark.unit


def test_missing_java_is_one_line(tmp_path: Path) -> None:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("RLSTREAM_", "JAVA"))}
    env["PATH"] = str(tmp_path / "empty")  # no java anywhere
    res = subprocess.run(
        [sys.executable, "-m", "rlstream.services.cli.main", "up", "--no-live",
         "--data-dir", str(tmp_path / "up")],
        capture_output=True, text=True, env=env, timeout=120, check=False,
    )  # fmt: skip
    assert res.returncode != 0
    lines = [x for x in (res.stdout + res.stderr).splitlines() if x.startswith("error")]
    assert len(lines) == 1, res.stdout + res.stderr
    assert "Java 17" in lines[0] and "JAVA_HOME" in lines[0] and "apt-get install" in lines[0]
    assert "Traceback" not in res.stderr
    assert read_stack(tmp_path / "up") is None


def test_stack_file_round_trip_and_bad_file(tmp_path: Path) -> None:
    from rlstream.errors import ConfigError
    from rlstream.localstack.stackfile import (
        ServiceEndpoint,
        StackFile,
        now,
        remove_stack,
        stack_path,
        write_stack,
    )  # fmt: skip

    st = StackFile(
        pid=os.getpid(), started_at=now(), data_dir=str(tmp_path), kafka_bootstrap="127.0.0.1:1",
        postgres_dsn="postgresql://postgres@127.0.0.1:2/postgres", redis_url="redis://127.0.0.1:3/0",
        topics={"raw": "rlstream.conversations.raw"},
        services={"ingest": ServiceEndpoint(pid=1, health_url="http://127.0.0.1:4",
                                            metrics_url="http://127.0.0.1:4/metrics")},
        state="ready",
    )  # fmt: skip
    write_stack(st)
    assert read_stack(tmp_path) == st and st.supervisor_alive()
    assert json.loads(stack_path(tmp_path).read_text())["schema_version"] == 1
    stack_path(tmp_path).write_bytes(orjson.dumps({"schema_version": 2}))
    with pytest.raises(ConfigError, match="not a stack file"):
        read_stack(tmp_path)
    remove_stack(tmp_path)
    assert read_stack(tmp_path) is None
