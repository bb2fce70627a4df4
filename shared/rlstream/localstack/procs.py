"""Child processes of ``rlstream up``: each in its own process group, output to a log file.

Why a group per child: stopping a server or a service must take its children with it (the
JVM's threads are one process, but a service's trainer child is not), and Ctrl-C in the
terminal must reach only the supervisor, which then stops everything in order. The testkit
has the same plumbing for tests; the product cannot import it (it is not in the wheel).
"""

from __future__ import annotations

import contextlib
import os
import signal
import socket
import subprocess
import time
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path

from rlstream.errors import RlstreamError
from rlstream.localstack.stackfile import pid_alive


class LocalStackError(RlstreamError):
    """The local stack cannot start: a missing piece (Java, the Kafka jars) or a server
    that did not become ready. The message says what to do."""

    code = "local_stack_error"


def free_port(host: str = "127.0.0.1") -> int:
    """A currently free TCP port on ``host`` (the kernel picks it)."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind((host, 0))
        return int(s.getsockname()[1])


def port_free(port: int, host: str = "127.0.0.1") -> bool:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        try:
            s.bind((host, port))
        except OSError:
            return False
        return True


def tcp_open(port: int, host: str = "127.0.0.1", timeout: float = 0.5) -> bool:
    try:
        with socket.create_connection((host, port), timeout=timeout):
            return True
    except OSError:
        return False


def last_line(path: Path) -> str:
    """The log's last non-empty line (an error's one line keeps to one line)."""
    try:
        lines = [x for x in path.read_text(errors="replace").splitlines() if x.strip()]
    except OSError:
        return "no log"
    return lines[-1].strip()[:300] if lines else "empty log"


class Child:
    """One long-running process started in a new session (its own process group)."""

    def __init__(
        self,
        name: str,
        argv: Sequence[str],
        log_path: Path,
        *,
        env: Mapping[str, str] | None = None,
        user: str | None = None,
        stop_signal: int = signal.SIGTERM,
    ) -> None:
        self.name = name
        self.argv = list(argv)
        self.log_path = log_path
        self.env = dict(env) if env is not None else None
        self.user = user
        self.stop_signal = stop_signal
        self.proc: subprocess.Popen[bytes] | None = None

    @property
    def pid(self) -> int:
        return self.proc.pid if self.proc is not None else -1

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
                start_new_session=True,
                user=self.user,
            )

    def alive(self) -> bool:
        return self.proc is not None and self.proc.poll() is None

    def wait_ready(self, check: Callable[[], bool], deadline_s: float) -> float:
        """Poll ``check`` until true; fail early when the process dies. Seconds waited."""
        t0 = time.monotonic()
        while True:
            if not self.alive():
                rc = self.proc.returncode if self.proc else None
                raise LocalStackError(
                    f"{self.name} exited (rc={rc}) before it was ready: {last_line(self.log_path)}"
                    f" (see {self.log_path})"
                )
            with contextlib.suppress(Exception):  # a probe fails in any way until ready
                if check():
                    return time.monotonic() - t0
            if time.monotonic() - t0 > deadline_s:
                raise LocalStackError(
                    f"{self.name} not ready after {deadline_s:.0f} s (see {self.log_path})"
                )
            time.sleep(0.2)

    def stop(self, grace_s: float = 20.0) -> int | None:
        """The stop signal to the group, SIGKILL after ``grace_s``; then SIGKILL whatever
        is left in the group (children that outlived their leader)."""
        if self.proc is None:
            return None
        if self.proc.poll() is None:
            signal_group(self.proc.pid, self.stop_signal)
            try:
                self.proc.wait(grace_s)
            except subprocess.TimeoutExpired:
                signal_group(self.proc.pid, signal.SIGKILL)
                self.proc.wait(10)
        signal_group(self.proc.pid, signal.SIGKILL)
        return self.proc.returncode


def signal_group(pgid: int, sig: int) -> None:
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(pgid, sig)


def run_checked(argv: Sequence[str], log_path: Path, *, user: str | None = None) -> None:
    """A one-shot setup command (initdb, the Kafka storage format), output to the log."""
    log_path.parent.mkdir(parents=True, exist_ok=True)
    with open(log_path, "ab") as log:
        log.write(f"\n=== run {' '.join(argv)}\n".encode())
        log.flush()
        res = subprocess.run(
            list(argv), stdout=log, stderr=subprocess.STDOUT, check=False, user=user, timeout=180
        )
    if res.returncode != 0:
        raise LocalStackError(
            f"{Path(argv[0]).name} failed (rc={res.returncode}): {last_line(log_path)}"
            f" (see {log_path})"
        )


def descendants(pid: int) -> set[int]:
    """Every process below ``pid`` (any depth), from ``ps`` (Linux and macOS)."""
    try:
        res = subprocess.run(
            ["ps", "-A", "-o", "pid=,ppid="], capture_output=True, text=True, check=False
        )
        table = res.stdout
    except OSError:  # no ps: Linux's /proc says the same
        table = "\n".join(_proc_pairs())
    children: dict[int, list[int]] = {}
    for line in table.splitlines():
        parts = line.split()
        if len(parts) == 2 and parts[0].isdigit() and parts[1].isdigit():
            children.setdefault(int(parts[1]), []).append(int(parts[0]))
    out: set[int] = set()
    todo = [pid]
    while todo:
        for c in children.get(todo.pop(), []):
            if c not in out:
                out.add(c)
                todo.append(c)
    return out


def _proc_pairs() -> list[str]:
    out = []
    for stat in Path("/proc").glob("[0-9]*/stat"):
        with contextlib.suppress(OSError, IndexError):
            fields = stat.read_text().rsplit(")", 1)[1].split()
            out.append(f"{stat.parent.name} {fields[1]}")
    return out


def wait_gone(pids: set[int], timeout_s: float) -> None:
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline and any(pid_alive(p) for p in pids):
        time.sleep(0.2)
