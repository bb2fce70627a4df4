"""A throwaway redis-server on a free loopback port (no persistence)."""

from __future__ import annotations

import socket
import time
from pathlib import Path

from .paths import redis_server_bin
from .procs import ManagedProcess, free_port


def _ping(port: int) -> bool:
    with socket.create_connection(("127.0.0.1", port), timeout=1) as s:
        s.sendall(b"*1\r\n$4\r\nPING\r\n")
        return s.recv(64).startswith(b"+PONG")


class RedisServer:
    def __init__(self, workdir: Path) -> None:
        self.workdir = workdir
        self.port = free_port()
        self.url = f"redis://127.0.0.1:{self.port}/0"
        self.log_path = workdir / "redis.log"
        self.ready_s = 0.0
        self._proc: ManagedProcess | None = None

    def start(self, deadline_s: float = 20.0) -> None:
        t0 = time.monotonic()
        self.workdir.mkdir(parents=True, exist_ok=True)
        binary = redis_server_bin()
        assert binary is not None
        argv = [
            str(binary),
            "--port", str(self.port),
            "--bind", "127.0.0.1",
            "--save", "",
            "--appendonly", "no",
            "--daemonize", "no",
            "--dir", str(self.workdir),
        ]  # fmt: skip
        self._proc = ManagedProcess("redis", argv, self.log_path)
        self._proc.start()
        self._proc.wait_ready(lambda: _ping(self.port), deadline_s)
        self.ready_s = time.monotonic() - t0

    def stop(self) -> None:
        if self._proc is not None:
            self._proc.stop()
            self._proc = None
