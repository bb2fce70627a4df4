"""The live terminal view ``rlstream up`` shows while its stack runs.

Why a thread-friendly blocking call: the supervisor owns the main thread (signals, child
processes); it runs :func:`run_live_view` on a thread of its own and sets ``stop`` to end
it. Nothing here can stop the stack: a failed snapshot is shown as a line and retried.
"""

from __future__ import annotations

import asyncio
import logging
import threading
import time

from rich.console import Console, Group
from rich.live import Live
from rich.text import Text

from rlstream.settings import Settings
from rlstream.stackstatus.collect import StatusCollector, why
from rlstream.stackstatus.model import StackLike, StatusSnapshot
from rlstream.stackstatus.render import render_snapshot

#: client libraries that log connection failures on their own (they would scroll the view)
_NOISY = ("aiokafka", "asyncio")


def run_live_view(
    stack: StackLike,
    stop: threading.Event,
    *,
    settings: Settings | None = None,
    console: Console | None = None,
    refresh_s: float = 1.0,
    title: str = "rlstream up",
    screen: bool = False,
) -> None:
    """Redraw the stack's status every ``refresh_s`` until ``stop`` is set."""
    levels = {n: logging.getLogger(n).level for n in _NOISY}
    for n in _NOISY:
        logging.getLogger(n).setLevel(logging.CRITICAL)
    try:
        asyncio.run(_live(stack, stop, settings, console, refresh_s, title, screen))
    finally:
        for n, level in levels.items():
            logging.getLogger(n).setLevel(level)


async def _live(
    stack: StackLike,
    stop: threading.Event,
    settings: Settings | None,
    console: Console | None,
    refresh_s: float,
    title: str,
    screen: bool,
) -> None:
    try:
        collector = StatusCollector(stack, settings, timeout_s=min(5.0, max(1.0, refresh_s * 3)))
    except Exception as exc:  # the settings do not load: say so once, never end the stack
        line = f"{title}: no live view: {why(exc)}"
        (console or Console(stderr=True)).print(line, markup=False, highlight=False, soft_wrap=True)
        return
    previous: StatusSnapshot | None = None
    waiting = Text(f"{title}: collecting the stack's status ...")
    try:
        with Live(waiting, console=console, refresh_per_second=4, screen=screen) as live:
            while not stop.is_set():
                t0 = time.monotonic()
                try:
                    snap = await collector.collect(previous)
                    live.update(render_snapshot(snap, title))
                    previous = snap
                except Exception as exc:  # a bug in a source must not end the view
                    failed = Text(f"status failed: {why(exc)}", style="red")
                    live.update(Group(failed) if previous is None else Group(
                        failed, render_snapshot(previous, title)))  # fmt: skip
                left = refresh_s - (time.monotonic() - t0)
                if left > 0:
                    await asyncio.to_thread(stop.wait, left)
    finally:
        await collector.aclose()
