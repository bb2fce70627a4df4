"""Child-process plumbing shared by every server manager.

Why: each server runs in its own process group so teardown can SIGTERM (then SIGKILL) the
whole tree, and its output goes to a log file that is dumped when something fails.
"""

from __future__ import annotations

import contextlib
import os
import signal
import socket
import subprocess
import time
from collections.abc import Callable, Sequence
from pathlib import Path


class ServerStartError(RuntimeError):
    """A server did not become ready before its deadline."""


def free_port(host: str = "127.0.0.1") -> int:
    """Return a currently free TCP port on ``host`` (the kernel picks it)."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind((host, 0))
        return int(s.getsockname()[1])


def tcp_open(port: int, host: str = "127.0.0.1", timeout: float = 0.5) -> bool:
    try:
        with socket.create_connection((host, port), timeout=timeout):
            return True
    except OSError:
        return False


def log_tail(path: Path, lines: int = 60) -> str:
    try:
        text = path.read_text(errors="replace")
    except OSError:
        return f"(no log at {path})"
    return "\n".join(text.splitlines()[-lines:])


class ManagedProcess:
    """One long-running server process, started in a new session (= process group)."""

    def __init__(
        self,
        name: str,
        argv: Sequence[str],
        log_path: Path,
        *,
        env: dict[str, str] | None = None,
        cwd: Path | None = None,
        user: str | None = None,
        stop_signal: int = signal.SIGTERM,
    ) -> None:
        self.name = name
        self.argv = list(argv)
        self.log_path = log_path
        self.env = env
        self.cwd = cwd
        self.user = user
        self.stop_signal = stop_signal
        self.proc: subprocess.Popen[bytes] | None = None

    def start(self) -> None:
        self.log_path.parent.mkdir(parents=True, exist_ok=True)
        with open(self.log_path, "ab") as log:
            log.write(f"\n=== start {' '.join(self.argv)}\n".encode())
            log.flush()
            self.proc = subprocess.Popen(
                self.argv,
                stdout=log,
                stderr=subprocess.STDOUT,
                stdin=subprocess.DEVNULL,
                env=self.env,
                cwd=self.cwd,
                start_new_session=True,
                user=self.user,
            )

    def alive(self) -> bool:
        return self.proc is not None and self.proc.poll() is None

    def wait_ready(self, check: Callable[[], bool], deadline_s: float) -> float:
        """Poll ``check`` until true; fail early if the process dies. Returns seconds waited."""
        t0 = time.monotonic()
        while True:
            if not self.alive():
                rc = self.proc.returncode if self.proc else None
                raise ServerStartError(
                    f"{self.name} exited (rc={rc}) before it was ready; log {self.log_path}:\n"
                    + log_tail(self.log_path)
                )
            try:
                if check():
                    return time.monotonic() - t0
            except Exception:  # a readiness probe may fail in any way until ready
                pass
            if time.monotonic() - t0 > deadline_s:
                raise ServerStartError(
                    f"{self.name} not ready after {deadline_s:.0f}s; log {self.log_path}:\n"
                    + log_tail(self.log_path)
                )
            time.sleep(0.2)

    def stop(self, grace_s: float = 15.0) -> int | None:
        """Send the stop signal (SIGTERM) to the group, then SIGKILL it after ``grace_s``."""
        if self.proc is None:
            return None
        if self.proc.poll() is None:
            _signal_group(self.proc.pid, self.stop_signal)
            try:
                self.proc.wait(grace_s)
            except subprocess.TimeoutExpired:
                _signal_group(self.proc.pid, signal.SIGKILL)
                self.proc.wait(10)
        # Children that outlived the leader still share its group id.
        _signal_group(self.proc.pid, signal.SIGKILL)
        return self.proc.returncode


def _signal_group(pgid: int, sig: int) -> None:
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(pgid, sig)


def run_checked(argv: Sequence[str], log_path: Path, **kw: object) -> None:
    """Run a one-shot setup command, appending its output to the server log."""
    log_path.parent.mkdir(parents=True, exist_ok=True)
    with open(log_path, "ab") as log:
        log.write(f"\n=== run {' '.join(map(str, argv))}\n".encode())
        log.flush()
        res = subprocess.run(list(argv), stdout=log, stderr=subprocess.STDOUT, check=False, **kw)  # type: ignore[call-overload]
    if res.returncode != 0:
        raise ServerStartError(
            f"{argv[0]} failed (rc={res.returncode}); log {log_path}:\n" + log_tail(log_path)
        )
