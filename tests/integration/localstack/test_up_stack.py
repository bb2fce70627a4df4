"""``rlstream up`` as a user runs it: the stack comes up on loopback, the services turn a
raw conversation into a transcript, Ctrl-C leaves no process behind (by PID), the next
``up`` finds the same data, ``--fresh`` does not."""

from __future__ import annotations

import asyncio
import shutil
import subprocess
import time
from pathlib import Path
from typing import Any

import pytest
from uphelp import alive, end_offsets

from rlstream.localstack.stackfile import read_stack
from rlstream_testkit.stack import conversation, encode, produce

pytestmark = [
    pytest.mark.kafka, pytest.mark.postgres, pytest.mark.redis, pytest.mark.slow,
    pytest.mark.timeout(900),
]  # fmt: skip


def _listening_ports(pids: set[int]) -> set[tuple[str, int]]:
    """(address, port) of every TCP listener owned by ``pids`` (from ss)."""
    out = subprocess.run(["ss", "-Hltnp"], capture_output=True, text=True, check=False).stdout
    found = set()
    for line in out.splitlines():
        if any(f"pid={p}," in line for p in pids):
            addr, _, port = line.split()[3].rpartition(":")
            found.add((addr, int(port)))
    return found


def test_up_ctrl_c_no_orphans_reuse_and_fresh(run_up: Any, tmp_path: Path) -> None:
    data = tmp_path / "up"
    up = run_up(data)
    st = up.wait_ready()
    assert set(st.services) == {"ingest", "grader", "curator", "evaluator"}
    assert st.topics["raw"] == "rlstream.conversations.raw"
    assert st.consumer_groups["ingest"] == "rlstream-ingest"
    assert st.pid == up.proc.pid
    for svc in st.services.values():  # health endpoints answer
        import urllib.request

        with urllib.request.urlopen(svc.health_url + "/readyz", timeout=5) as r:
            assert r.status == 200
    up.note_pids()
    assert {s.pid for s in st.services.values()} <= up.pids
    if shutil.which("ss"):  # nothing listens beyond loopback
        ports = _listening_ports(up.pids | {up.proc.pid})
        assert ports, "no listeners found"
        assert all(a in ("127.0.0.1", "[::ffff:127.0.0.1]") for a, _ in ports), ports

    convs = [conversation(f"up{i}", f"task{i}", resolved=True) for i in range(5)]
    asyncio.run(produce(st.kafka_bootstrap, st.topics["raw"], encode(convs)))
    deadline = time.monotonic() + 120
    while end_offsets(st.kafka_bootstrap, st.topics["transcripts"]) < 5:
        assert time.monotonic() < deadline, up.output()[-3000:]
        time.sleep(1)
    pii_key = (data / "pii.key").read_text()

    pids = set(up.pids)
    assert up.interrupt() == 0, up.output()[-3000:]
    time.sleep(1)
    assert alive(pids) == set(), f"left behind: {alive(pids)}"
    assert read_stack(data) is None  # removed on shutdown
    assert "stopped; data kept" in up.output()

    again = run_up(data)
    st2 = again.wait_ready()
    assert end_offsets(st2.kafka_bootstrap, st2.topics["raw"]) == 5  # the same broker data
    assert end_offsets(st2.kafka_bootstrap, st2.topics["transcripts"]) == 5
    assert (data / "pii.key").read_text() == pii_key
    assert again.interrupt() == 0
    assert alive(again.pids) == set()

    fresh = run_up(data, "--fresh")
    st3 = fresh.wait_ready()
    assert end_offsets(st3.kafka_bootstrap, st3.topics["raw"]) == 0
    assert (data / "pii.key").read_text() != pii_key
    assert fresh.interrupt() == 0
    assert alive(fresh.pids) == set()
