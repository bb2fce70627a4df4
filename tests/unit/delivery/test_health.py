"""/healthz and /readyz tell the truth, answer while the service's loop is busy, and turn
malformed requests into 400s instead of unhandled exceptions (issue 12, item 8)."""

from __future__ import annotations

import asyncio
import logging
import time
import urllib.error
import urllib.request
from typing import Any

import pytest

from rlstream.delivery.progress import Progress
from rlstream.observability.health import Health

pytestmark = pytest.mark.unit


def _get(port: int, path: str) -> tuple[int, str]:
    try:
        with urllib.request.urlopen(f"http://127.0.0.1:{port}{path}", timeout=2) as r:
            return r.status, r.read().decode()
    except urllib.error.HTTPError as e:
        return e.code, e.read().decode()


async def _raw(port: int, data: bytes) -> bytes:
    reader, writer = await asyncio.open_connection("127.0.0.1", port)
    writer.write(data)
    await writer.drain()
    if writer.can_write_eof():
        writer.write_eof()
    out = await asyncio.wait_for(reader.read(), 10)
    writer.close()
    return out


async def test_health_answers_while_the_event_loop_is_blocked() -> None:
    h = Health(busy_after_s=1.0)
    port = await h.start("127.0.0.1", 0)
    h.set_ready(True)
    try:
        results: list[tuple[float, int]] = []

        def probe() -> None:
            for _ in range(4):
                t = time.monotonic()
                code, _ = _get(port, "/healthz")
                results.append((time.monotonic() - t, code))
                time.sleep(0.3)

        thread = asyncio.get_running_loop().run_in_executor(None, probe)
        time.sleep(2.5)  # CPU-bound work on the service's loop (e.g. a huge record)
        code, body = _get(port, "/readyz")
        await thread
        assert all(c == 200 and dt < 1.5 for dt, c in results), results
        assert code == 503 and "busy" in body  # not ready while the loop is stuck
        await asyncio.sleep(1.0)
        assert _get(port, "/readyz")[0] == 200
    finally:
        await h.stop()


@pytest.mark.parametrize(
    "request_bytes",
    [
        b"\xff\xfe\x00garbage\r\n\r\n",
        b"GET\r\n\r\n",
        b"GET /readyz\r\n\r\n",
        b"POST /readyz HTTP/1.1\r\n\r\n",
        b"GET /\xff\xfe HTTP/1.1\r\n\r\n",
        b"GET /" + b"a" * 100_000 + b" HTTP/1.1\r\n\r\n",
        b"GET /readyz HTTP/1.1\r\n" + b"X: y\r\n" * 200 + b"\r\n",
    ],
)
async def test_malformed_requests_get_400_and_no_error_log(
    request_bytes: bytes, caplog: Any
) -> None:
    h = Health()
    port = await h.start("127.0.0.1", 0)
    try:
        with caplog.at_level(logging.DEBUG, logger="asyncio"):
            out = await _raw(port, request_bytes)
        assert out.startswith(b"HTTP/1.1 400"), out[:80]
        assert not [r for r in caplog.records if r.levelno >= logging.ERROR]
    finally:
        await h.stop()


class _Consumer:
    def __init__(self, hw: int) -> None:
        self.hw = hw

    def highwater(self, tp: Any) -> int:
        return self.hw


class _Rec:
    def __init__(self, offset: int) -> None:
        self.topic, self.partition, self.offset = "in", 0, offset


def test_progress_reports_a_stalled_partition_and_clears_it() -> None:
    p = Progress("svc", stall_after_s=0.05)
    p.consumer = _Consumer(hw=10)
    p.seen([_Rec(3)])
    assert p.check() is None  # not yet stalled
    time.sleep(0.1)
    assert p.check() == "partition stalled: in/0"
    p.committed([_Rec(9)])  # caught up to the high watermark
    assert p.check() is None
    p.broker_error = "broker unreachable"
    assert p.check() == "broker unreachable"
