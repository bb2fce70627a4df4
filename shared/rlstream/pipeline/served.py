"""The demo's served model: ``rlstream serve`` as a child process on a loopback port, the
simulated users' HTTP client, and the hot-swap call a promotion makes.

The client speaks the OpenAI chat-completions shape over plain HTTP (what an official
client sends), so the demo exercises the same server a product would call. A promotion
swaps the adapter with ``POST /v1/rlstream/adapter``; a server without that endpoint
(404) is restarted on the new model instead, and the cycle record says which happened.
"""

from __future__ import annotations

import os
import socket
import subprocess
import time
import urllib.error
import urllib.request
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import orjson

from rlstream.errors import RlstreamError

ADAPTER_PATH = "/v1/rlstream/adapter"


class ServeError(RlstreamError):
    """The demo's server did not start, answer or swap."""

    code = "serve_failed"


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _post(url: str, body: dict[str, Any], headers: dict[str, str], timeout: float) -> Any:
    req = urllib.request.Request(
        url,
        data=orjson.dumps(body),
        headers={"Content-Type": "application/json", **headers},
        method="POST",
    )
    with urllib.request.urlopen(req, timeout=timeout) as resp:
        return orjson.loads(resp.read())


class ServedModel:
    """One ``rlstream serve`` child: started on ``model`` (None: the base model alone)."""

    def __init__(
        self,
        argv: Sequence[str],
        log_jsonl: Path,
        stderr_log: Path,
        *,
        ready_timeout_s: float = 300.0,
    ) -> None:
        self.argv, self.log_jsonl, self.stderr_log = list(argv), log_jsonl, stderr_log
        self.ready_timeout_s = ready_timeout_s
        self.proc: subprocess.Popen[bytes] | None = None
        self.port = 0
        self.model_id = ""
        self.restarts = 0

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def start(self, model: Path | None, model_id: str) -> float:
        """Start serving ``model`` as ``model_id``; returns the seconds until ready."""
        self.port = free_port()
        args = [*self.argv, "--port", str(self.port), "--model-id", model_id]
        args += ["--log-jsonl", str(self.log_jsonl)]
        if model is not None:
            args.insert(len(self.argv), str(model))
        self.stderr_log.parent.mkdir(parents=True, exist_ok=True)
        t0 = time.perf_counter()
        with self.stderr_log.open("ab") as err:
            self.proc = subprocess.Popen(
                args, stdout=err, stderr=err, env={**os.environ, "PYTHONUNBUFFERED": "1"}
            )
        self._wait_ready()
        self.model_id = model_id
        return round(time.perf_counter() - t0, 2)

    def _wait_ready(self) -> None:
        deadline = time.monotonic() + self.ready_timeout_s
        while time.monotonic() < deadline:
            if self.proc is not None and self.proc.poll() is not None:
                tail = self.stderr_log.read_text(errors="replace")[-600:]
                raise ServeError(f"rlstream serve exited {self.proc.returncode}: {tail}")
            try:
                with urllib.request.urlopen(f"{self.url}/readyz", timeout=2) as r:
                    if r.status == 200:
                        return
            except (urllib.error.URLError, OSError):
                pass
            time.sleep(0.5)
        raise ServeError(f"rlstream serve not ready after {self.ready_timeout_s:.0f} s")

    def chat(self, body: dict[str, Any], conversation_id: str, timeout: float = 300.0) -> Any:
        """One chat completion, as an OpenAI client sends it."""
        return _post(
            f"{self.url}/v1/chat/completions",
            body,
            {"X-Conversation-Id": conversation_id},
            timeout,
        )

    def swap(self, model: Path | None, model_id: str, promotion_id: str | None) -> str:
        """Serve ``model_id`` from now on: ``"hot-swap"`` through the admin endpoint, else
        (a server without it) ``"restart"``."""
        body = {
            "model_id": model_id,
            "model_path": None if model is None else str(model),
            "promotion_id": promotion_id,
        }
        token = os.environ.get("RLSTREAM_SERVE_ADMIN_TOKEN")  # the child's, if it was given
        auth = {"Authorization": f"Bearer {token}"} if token else {}
        try:
            answer = _post(f"{self.url}{ADAPTER_PATH}", body, auth, 600.0)
        except urllib.error.HTTPError as e:
            if e.code not in (404, 405):
                raise ServeError(f"hot-swap to {model_id[:12]} refused: HTTP {e.code}") from e
            self.stop()
            self.restarts += 1
            self.start(model, model_id)
            return "restart"
        if answer.get("model_id") != model_id:
            raise ServeError(f"hot-swap answered {answer!r}, not model {model_id[:12]}")
        self.model_id = model_id
        return "hot-swap"

    def stop(self) -> None:
        if self.proc is None:
            return
        self.proc.terminate()
        try:
            self.proc.wait(timeout=30)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait(timeout=30)
        self.proc = None
