"""Blocking library calls from async MCP tools: a worker thread, progress, cancellation.

The library's stages (ingest, grade, train, evaluate) are synchronous and CPU-bound, so a
tool runs them in a worker thread. The thread reports progress through the request's
``Context.report_progress`` (an MCP progress notification when the client sent a progress
token) and checks a flag at every progress point: when the client cancels the request, the
flag is set and the work stops at its next step with :class:`OperationCancelled`.
"""

from __future__ import annotations

import contextlib
import threading
import time
from collections.abc import Callable
from typing import Any, TypeVar

import anyio
import anyio.from_thread
import anyio.to_thread
from mcp.server.fastmcp import Context

T = TypeVar("T")

#: at most this many progress notifications per second from one call (a stage advances per
#: record; a notification per record would flood the client)
MAX_RATE_HZ = 5.0
#: how long a cancelled call waits for its worker to reach a progress point and stop
STOP_WAIT_S = 120.0


class OperationCancelled(Exception):
    """Raised inside the worker thread at a progress point after the client cancelled."""


class Reporter:
    """Progress from the worker thread to the client, and the cancel flag it checks."""

    def __init__(self, ctx: Context[Any, Any, Any] | None) -> None:
        self.ctx = ctx
        self.cancelled = threading.Event()
        self._last = 0.0
        self.sent = 0
        #: the last point reached (for the "stopped at" notice after a cancel)
        self.at: tuple[float, float | None, str] = (0, None, "")

    def check(self) -> None:
        if self.cancelled.is_set():
            raise OperationCancelled("cancelled by the client")

    def report(
        self, done: float, total: float | None, message: str, *, force: bool = False
    ) -> None:
        """Called from the worker thread; throttled unless ``force``."""
        self.check()
        self.at = (done, total, message)
        now = time.monotonic()
        if self.ctx is None or (not force and now - self._last < 1.0 / MAX_RATE_HZ):
            return
        self._last = now
        ctx = self.ctx
        try:
            anyio.from_thread.run(ctx.report_progress, done, total, message)
            self.sent += 1
        except Exception:
            pass

    async def notice_stopped(self, stopped: bool) -> None:
        """A log notification saying where the cancelled work stopped (the request itself
        was already answered "Request cancelled")."""
        if self.ctx is None:
            return
        done, total, message = self.at
        where = f"{message} ({done:g}/{total:g})" if total else f"{message} ({done:g})"
        text = (
            f"cancelled: stopped at {where}"
            if stopped
            else f"cancelled, but still running {STOP_WAIT_S:g} s later at {where}"
        )
        with contextlib.suppress(Exception):  # the client may be gone
            await self.ctx.request_context.session.send_log_message(
                level="notice" if stopped else "warning", data=text, logger="rlstream"
            )


class StageReporter:
    """The library's :class:`rlstream.pipeline.Stages` as MCP progress notifications."""

    def __init__(self, reporter: Reporter) -> None:
        self.r = reporter
        self.name = ""
        self.done_n = 0
        self.total: int | None = None

    def start(self, name: str, total: int | None = None) -> None:
        self.name, self.done_n, self.total = name, 0, total
        self.r.report(0, total, name, force=True)

    def advance(self, n: int = 1) -> None:
        self.done_n += n
        self.r.report(self.done_n, self.total, self.name)

    def done(self, name: str, seconds: float, summary: str) -> None:
        self.r.check()


async def run_blocking(reporter: Reporter, fn: Callable[[], T]) -> T:
    """``fn()`` in a worker thread; a cancelled request sets the flag the thread checks and
    waits (shielded, bounded) for it to stop, so a cancelled call does not keep training."""
    finished = threading.Event()

    def work() -> T:
        try:
            return fn()
        finally:
            finished.set()

    try:
        return await anyio.to_thread.run_sync(work, abandon_on_cancel=True)
    except anyio.get_cancelled_exc_class():
        reporter.cancelled.set()
        with anyio.CancelScope(shield=True):
            stopped = await anyio.to_thread.run_sync(lambda: finished.wait(timeout=STOP_WAIT_S))
            await reporter.notice_stopped(stopped)
        raise
