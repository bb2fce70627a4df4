"""Run a command in a real terminal (a detached tmux session on a private server) and read
what its pane shows: how the live views are tested as a person would see them."""

from __future__ import annotations

import contextlib
import os
import shlex
import shutil
import subprocess
import time
import uuid
from collections.abc import Callable, Iterator, Sequence


class Pane:
    def __init__(self, socket: str) -> None:
        self.socket = socket

    def _tmux(self, *args: str) -> str:
        return subprocess.run(
            ["tmux", "-L", self.socket, *args], capture_output=True, text=True, check=True
        ).stdout

    def capture(self) -> str:
        """The visible screen (and its scrollback), as text."""
        return self._tmux("capture-pane", "-p", "-J", "-S", "-200", "-t", "view")

    def keys(self, *keys: str) -> None:
        self._tmux("send-keys", "-t", "view", *keys)

    def wait_for(self, ok: Callable[[str], bool], timeout: float = 60.0) -> str:
        """The first capture ``ok`` accepts; the last one in the AssertionError otherwise."""
        deadline = time.monotonic() + timeout
        text = ""
        while time.monotonic() < deadline:
            text = self.capture()
            if ok(text):
                return text
            time.sleep(0.3)
        raise AssertionError(f"the pane never showed what was expected; it shows:\n{text}")


@contextlib.contextmanager
def tmux_pane(
    argv: Sequence[str], *, width: int = 160, height: int = 60, env: dict[str, str] | None = None
) -> Iterator[Pane]:
    """``argv`` in a fresh terminal; after it exits the pane shows ``EXITED <status>``."""
    if shutil.which("tmux") is None:
        raise RuntimeError("tmux is not installed (.ci/run installs it)")
    socket = f"rlstream-test-{uuid.uuid4().hex[:8]}"
    cmd = f"{shlex.join(argv)}; echo EXITED $?; sleep 600"
    full_env = {**os.environ, **(env or {})}
    full_env.pop("TMUX", None)  # inside a tmux session, tmux refuses to nest without this
    subprocess.run(
        ["tmux", "-L", socket, "-f", "/dev/null", "new-session", "-d", "-s", "view",
         "-x", str(width), "-y", str(height), cmd],
        check=True, env=full_env,
    )  # fmt: skip
    try:
        yield Pane(socket)
    finally:
        subprocess.run(["tmux", "-L", socket, "kill-server"], capture_output=True, check=False)
