"""Health, readiness and metrics over plain HTTP (no web framework needed).

The server runs on its own thread and event loop: a batch that keeps the service's loop
busy (a large record, a slow regex) must not make the pod look dead, or Kubernetes kills
it mid-batch and the same batch comes back (a restart loop with zero progress).

``/healthz``: the process answers, its main loop has ticked within ``stuck_after_s`` and
every registered liveness check passes (a partition that has not advanced for far too long).
``/readyz``: started, the main loop ticked within ``busy_after_s``, the last batch did
not end in a retry loop, and every registered check (broker reachable, no partition
stalled) passes. ``/metrics``: Prometheus text format. Anything that is not a well-formed
``GET`` gets a 400, never an unhandled exception.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field

from prometheus_client import CONTENT_TYPE_LATEST, generate_latest

log = logging.getLogger("rlstream.health")

Check = Callable[[], str | None]  # -> None when fine, else why not ready


@dataclass
class Health:
    ready: bool = False
    reason: str = "starting"
    busy_after_s: float = 15.0
    stuck_after_s: float = 300.0
    checks: dict[str, Check] = field(default_factory=dict)
    #: checks that fail /healthz too: the platform restarts the process
    live_checks: dict[str, Check] = field(default_factory=dict)
    _beat: float = field(default_factory=time.monotonic, repr=False)
    _loop: asyncio.AbstractEventLoop | None = field(default=None, repr=False)
    _thread: threading.Thread | None = field(default=None, repr=False)
    _server: asyncio.Server | None = field(default=None, repr=False)
    _ticker: asyncio.Task[None] | None = field(default=None, repr=False)

    def set_ready(self, ready: bool, reason: str = "") -> None:
        self.ready, self.reason = ready, reason

    def add_check(self, name: str, check: Check) -> None:
        self.checks[name] = check

    def add_live_check(self, name: str, check: Check) -> None:
        self.live_checks[name] = check

    def not_live_reason(self) -> str | None:
        """Why the process should be restarted, or None."""
        idle = time.monotonic() - self._beat
        if idle > self.stuck_after_s:
            return f"stuck {idle:.0f}s"
        return _first_failing(self.live_checks)

    def not_ready_reason(self) -> str | None:
        """Why the service cannot make progress now, or None."""
        if not self.ready:
            return self.reason or "not ready"
        idle = time.monotonic() - self._beat
        if idle > self.busy_after_s:
            return f"event loop busy for {idle:.0f}s"
        return _first_failing(self.checks)

    async def _handle(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        try:
            status, ctype, body = await self._respond(reader)
            head = (
                f"HTTP/1.1 {status}\r\nContent-Type: {ctype}\r\n"
                f"Content-Length: {len(body)}\r\nConnection: close\r\n\r\n"
            )
            writer.write(head.encode() + body)
            await writer.drain()
        except (TimeoutError, ConnectionError, asyncio.IncompleteReadError):
            pass
        except Exception:
            log.debug("health request failed", exc_info=True)
        finally:
            writer.close()
            with contextlib.suppress(Exception):
                await writer.wait_closed()

    async def _respond(self, reader: asyncio.StreamReader) -> tuple[str, str, bytes]:
        bad = ("400 Bad Request", "text/plain", b"bad request\n")
        try:
            line = await asyncio.wait_for(reader.readline(), 5)
            for _ in range(100):  # headers; a client sending endless headers gets a 400
                h = await asyncio.wait_for(reader.readline(), 5)
                if h in (b"\r\n", b"\n", b""):
                    break
            else:
                return bad
        except ValueError:  # a line over the stream limit
            return bad
        parts = line.split()
        if (
            len(parts) != 3
            or parts[0] not in (b"GET", b"HEAD")
            or not parts[2].startswith(b"HTTP/")
        ):
            return bad
        try:
            path = parts[1].decode("ascii")
        except UnicodeDecodeError:
            return bad
        return self.route(path)

    def route(self, path: str) -> tuple[str, str, bytes]:
        path = path.split("?", 1)[0]
        if path in ("/healthz", "/health", "/livez"):
            dead = self.not_live_reason()
            if dead is not None:
                return "503 Service Unavailable", "text/plain", f"{dead}\n".encode()
            return "200 OK", "text/plain", b"ok\n"
        if path in ("/readyz", "/ready"):
            why = self.not_ready_reason()
            if why is None:
                return "200 OK", "text/plain", b"ready\n"
            return "503 Service Unavailable", "text/plain", f"{why}\n".encode()
        if path == "/metrics":
            return "200 OK", CONTENT_TYPE_LATEST, generate_latest()
        return "404 Not Found", "text/plain", b"not found\n"

    async def _tick(self) -> None:
        while True:
            self._beat = time.monotonic()
            await asyncio.sleep(0.5)

    async def start(self, host: str, port: int) -> int:
        """Listen on a thread of its own; returns the bound port (0: ephemeral, in tests)."""
        self._beat = time.monotonic()
        self._ticker = asyncio.get_running_loop().create_task(self._tick())
        loop = asyncio.new_event_loop()
        bound: list[int] = []
        failed: list[BaseException] = []
        started = threading.Event()

        def serve() -> None:
            asyncio.set_event_loop(loop)
            try:
                self._server = loop.run_until_complete(
                    asyncio.start_server(self._handle, host, port)
                )
                bound.append(int(self._server.sockets[0].getsockname()[1]))
            except BaseException as exc:
                failed.append(exc)
                started.set()
                return
            started.set()
            loop.run_forever()
            loop.close()

        self._loop = loop
        self._thread = threading.Thread(target=serve, name="rlstream-health", daemon=True)
        self._thread.start()
        await asyncio.to_thread(started.wait)
        if failed:
            raise failed[0]
        return bound[0]

    async def stop(self) -> None:
        if self._ticker is not None:
            self._ticker.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._ticker
            self._ticker = None
        loop, server = self._loop, self._server
        if loop is None:
            return

        async def close() -> None:
            if server is not None:
                server.close()
                await server.wait_closed()

        with contextlib.suppress(Exception):
            await asyncio.wrap_future(asyncio.run_coroutine_threadsafe(close(), loop))
        loop.call_soon_threadsafe(loop.stop)
        if self._thread is not None:
            await asyncio.to_thread(self._thread.join, 5)
        self._loop = self._server = self._thread = None


def _first_failing(checks: dict[str, Check]) -> str | None:
    for name, check in list(checks.items()):
        try:
            why = check()
        except Exception as exc:
            why = f"{name} check failed: {exc!r}"
        if why:
            return why
    return None
