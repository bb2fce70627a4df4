"""The Docker engine (Debian's docker.io) the `docker` tier and the cluster's image import use.

Same data root and socket as tools/harness/docker-lib.sh (in the cache), so the images that
ensure-images.sh built are there. A running engine is reused; one this process started is
stopped again when the last user leaves.
"""

from __future__ import annotations

import fcntl
import os
import shutil
import subprocess
import time
from pathlib import Path
from types import TracebackType

from .procs import ManagedProcess, ServerStartError, log_tail


class DockerEngine:
    def __init__(self, cache: Path) -> None:
        self.root = cache / "docker"
        self.run = cache / "run"
        self.sock = self.run / "docker.sock"
        self.lock = cache / "locks" / "dockerd.lock"
        self.log_path = self.run / "dockerd.log"
        self.env = {**os.environ, "DOCKER_HOST": f"unix://{self.sock}", "DOCKER_BUILDKIT": "0"}
        self._proc: ManagedProcess | None = None

    def ok(self) -> bool:
        r = subprocess.run(
            ["docker", "version", "--format", "{{.Server.Version}}"],
            env=self.env, capture_output=True, timeout=20,
        )  # fmt: skip
        return r.returncode == 0

    def start(self) -> None:
        if shutil.which("dockerd") is None:
            raise ServerStartError("no dockerd: apt-get install docker.io")
        if self.ok():
            return
        self.run.mkdir(parents=True, exist_ok=True)
        self.lock.parent.mkdir(parents=True, exist_ok=True)
        with open(self.lock, "w") as lk:
            fcntl.flock(lk, fcntl.LOCK_EX)
            if self.ok():
                return
            self._proc = ManagedProcess(
                "dockerd",
                [
                    "dockerd", "--data-root", str(self.root),
                    "--exec-root", str(self.run / "docker"),
                    "--pidfile", str(self.run / "dockerd.pid"), "-H", self.env["DOCKER_HOST"],
                    "--iptables=false", "--ip6tables=false", "--bridge=none",
                    "--storage-driver", "overlay2",
                ],
                self.log_path,
            )  # fmt: skip
            self._proc.start()
            self._proc.wait_ready(self.ok, 60)

    def stop(self) -> None:
        if self._proc is not None:
            self._proc.stop(grace_s=20)
            self._proc = None

    def __enter__(self) -> DockerEngine:
        self.start()
        return self

    def __exit__(
        self, et: type[BaseException] | None, e: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.stop()

    def docker(self, *args: str, timeout: float = 300) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            ["docker", *args], env=self.env, capture_output=True, text=True, timeout=timeout
        )

    def wait_gone(self, name: str, deadline_s: float = 30) -> None:
        t0 = time.monotonic()
        while time.monotonic() - t0 < deadline_s:
            if self.docker("inspect", name).returncode != 0:
                return
            time.sleep(0.5)
        raise ServerStartError(f"container {name} still exists; {log_tail(self.log_path)}")
