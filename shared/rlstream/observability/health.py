"""Health, readiness and metrics over plain HTTP (no web framework needed).

``/healthz``: the event loop answers. ``/readyz``: the service finished starting and its
last batch did not end in a retry loop. ``/metrics``: Prometheus text format.
"""

from __future__ import annotations

import asyncio
import contextlib
from dataclasses import dataclass, field

from prometheus_client import CONTENT_TYPE_LATEST, generate_latest


@dataclass
class Health:
    ready: bool = False
    reason: str = "starting"
    _server: asyncio.Server | None = field(default=None, repr=False)

    def set_ready(self, ready: bool, reason: str = "") -> None:
        self.ready, self.reason = ready, reason

    async def _handle(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        try:
            line = await asyncio.wait_for(reader.readline(), 5)
            while (await asyncio.wait_for(reader.readline(), 5)) not in (b"\r\n", b"\n", b""):
                pass
            path = line.split()[1].decode() if len(line.split()) > 1 else "/"
            status, ctype, body = self.route(path)
            head = (
                f"HTTP/1.1 {status}\r\nContent-Type: {ctype}\r\n"
                f"Content-Length: {len(body)}\r\nConnection: close\r\n\r\n"
            )
            writer.write(head.encode() + body)
            await writer.drain()
        except (TimeoutError, ConnectionError, IndexError):
            pass
        finally:
            writer.close()
            with contextlib.suppress(Exception):
                await writer.wait_closed()

    def route(self, path: str) -> tuple[str, str, bytes]:
        path = path.split("?", 1)[0]
        if path in ("/healthz", "/health", "/livez"):
            return "200 OK", "text/plain", b"ok\n"
        if path in ("/readyz", "/ready"):
            if self.ready:
                return "200 OK", "text/plain", b"ready\n"
            return "503 Service Unavailable", "text/plain", f"{self.reason}\n".encode()
        if path == "/metrics":
            return "200 OK", CONTENT_TYPE_LATEST, generate_latest()
        return "404 Not Found", "text/plain", b"not found\n"

    async def start(self, host: str, port: int) -> int:
        """Listen; returns the bound port (pass 0 for an ephemeral one in tests)."""
        self._server = await asyncio.start_server(self._handle, host, port)
        sock = self._server.sockets[0]
        return int(sock.getsockname()[1])

    async def stop(self) -> None:
        if self._server is not None:
            self._server.close()
            await self._server.wait_closed()
            self._server = None
