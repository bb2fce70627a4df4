"""Helpers of the ``rlstream up`` tests: run it as a real child process (as a user would), and look at it from
outside: its stack.json, its processes (by PID, via ps), its topics."""

from __future__ import annotations

import asyncio
import contextlib
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from rlstream.localstack.procs import descendants
from rlstream.localstack.stackfile import StackFile, read_stack
from rlstream_testkit.paths import missing_reason


def need_servers() -> None:
    for tier in ("kafka", "postgres", "redis"):
        reason = missing_reason(tier)
        if reason:
            pytest.skip(f"{tier} tier unavailable: {reason}")


class Up:
    """One ``rlstream up`` process; output (stdout and stderr) in ``log``."""

    def __init__(self, data_dir: Path, *args: str, env: dict[str, str] | None = None) -> None:
        self.data_dir = data_dir
        self.log = data_dir.parent / f"up-{data_dir.name}-{time.monotonic_ns()}.out"
        full_env = {k: v for k, v in os.environ.items() if not k.startswith("RLSTREAM_")}
        if "RLSTREAM_CACHE_DIR" in os.environ:
            full_env["RLSTREAM_CACHE_DIR"] = os.environ["RLSTREAM_CACHE_DIR"]
        full_env.update(env or {})
        full_env["COLUMNS"] = "200"
        with open(self.log, "wb") as out:
            self.proc = subprocess.Popen(
                [sys.executable, "-m", "rlstream.services.cli.main", "up", "--no-live",
                 "--data-dir", str(data_dir), *args],
                stdout=out, stderr=subprocess.STDOUT, env=full_env,
            )  # fmt: skip
        self.pids: set[int] = set()

    def output(self) -> str:
        return self.log.read_text(errors="replace")

    def wait_ready(self, timeout: float = 300.0) -> StackFile:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            assert self.proc.poll() is None, f"rlstream up exited:\n{self.output()[-3000:]}"
            st = read_stack(self.data_dir)
            self.note_pids()
            if st is not None and st.state == "ready":
                return st
            time.sleep(0.5)
        raise AssertionError(f"not ready after {timeout} s:\n{self.output()[-3000:]}")

    def wait_for(self, text: str, timeout: float) -> None:
        deadline = time.monotonic() + timeout
        while text not in self.output():
            assert self.proc.poll() is None, f"rlstream up exited:\n{self.output()[-4000:]}"
            assert time.monotonic() < deadline, f"no {text!r}:\n{self.output()[-4000:]}"
            self.note_pids()
            time.sleep(1)

    def note_pids(self) -> None:
        """Every process below ``rlstream up`` now (servers, services, trainers)."""
        if self.proc.poll() is None:
            self.pids |= descendants(self.proc.pid)

    def interrupt(self, timeout: float = 180.0) -> int:
        self.note_pids()
        self.proc.send_signal(signal.SIGINT)
        return self.proc.wait(timeout)

    def kill(self) -> None:
        self.note_pids()
        if self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait(30)
        for pid in self.pids:  # leave nothing behind even when the test failed
            with contextlib.suppress(OSError):
                os.killpg(pid, signal.SIGKILL)
            with contextlib.suppress(OSError):
                os.kill(pid, signal.SIGKILL)


def alive(pids: set[int]) -> set[int]:
    """The pids that still exist and are not zombies."""
    out = set()
    for pid in pids:
        try:
            stat = Path(f"/proc/{pid}/stat").read_text()
        except OSError:
            continue
        if stat.rsplit(")", 1)[1].split()[0] != "Z":
            out.add(pid)
    return out


def end_offsets(bootstrap: str, topic: str) -> int:
    """Records in ``topic`` (the sum of its partitions' end offsets)."""
    from aiokafka import AIOKafkaConsumer, TopicPartition

    async def go() -> int:
        cons = AIOKafkaConsumer(bootstrap_servers=bootstrap, group_id=None)
        await cons.start()
        try:
            # topics() alone leaves partitions_for_topic empty: refresh the metadata first
            await cons._client.force_metadata_update()
            assert topic in await cons.topics(), topic
            parts = cons.partitions_for_topic(topic) or set()
            tps = [TopicPartition(topic, p) for p in parts]
            return sum((await cons.end_offsets(tps)).values()) if tps else 0
        finally:
            await cons.stop()

    return asyncio.run(go())
