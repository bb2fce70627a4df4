"""``rlstream status``: the state of the stack ``rlstream up`` runs, once (or live)."""

from __future__ import annotations

import asyncio
import json
import signal
import threading
from pathlib import Path

import typer

from rlstream.errors import ConfigError
from rlstream.localstack.stackfile import StackFile, default_data_dir, read_stack, stack_path
from rlstream.services.cli.common import friendly_errors, out
from rlstream.stackstatus.collect import StatusCollector
from rlstream.stackstatus.model import StatusSnapshot


def _stack(data_dir: Path | None) -> StackFile:
    folder = data_dir if data_dir is not None else default_data_dir()
    stack = read_stack(folder)
    if stack is None:
        raise ConfigError(f"no stack is up: {stack_path(folder)} does not exist (start one with "
                          "rlstream up, or give --data-dir / RLSTREAM_UP_DIR)")  # fmt: skip
    if not stack.supervisor_alive():
        raise ConfigError(
            f"the stack in {folder} is not running: its supervisor (pid {stack.pid}) is gone "
            f"and left {stack_path(folder)} behind (start it again with rlstream up)"
        )
    return stack


async def _snapshot(stack: StackFile, sample_s: float) -> StatusSnapshot:
    collector = StatusCollector(stack)
    try:
        first = await collector.collect()
        if sample_s <= 0:
            return first
        await asyncio.sleep(max(0.0, sample_s - first.collect_s))
        return await collector.collect(first)
    finally:
        await collector.aclose()


def _watch(stack: StackFile, refresh_s: float) -> None:
    from rlstream.stackstatus.live import run_live_view

    stop = threading.Event()
    previous = signal.signal(signal.SIGTERM, lambda *_: stop.set())
    try:
        run_live_view(stack, stop, console=out, refresh_s=refresh_s, title="rlstream status")
    except KeyboardInterrupt:
        stop.set()
    finally:
        signal.signal(signal.SIGTERM, previous)


@friendly_errors
def status(
    data_dir: Path | None = typer.Option(
        None, "--data-dir", help="the stack's folder (default: RLSTREAM_UP_DIR, else .rlstream/up)"
    ),
    as_json: bool = typer.Option(False, "--json", help="one JSON object (for scripts)"),
    sample: float = typer.Option(
        1.0,
        "--sample",
        min=0.0,
        help="seconds between the two looks the rates come from (0: one look, no rates)",
    ),
    watch: bool = typer.Option(False, "--watch", help="redraw every second until Ctrl-C"),
) -> None:
    """What the running stack is doing: each service's state and readiness, each topic's
    produced and consumed records and consumer lag, rollouts scored per second, groups
    pending and released, training runs and evaluations, the newest dead letters and why.
    A source that cannot be read is marked unavailable with the reason.

    Example: rlstream status --json | jq .topics
    """
    stack = _stack(data_dir)
    if watch:
        _watch(stack, refresh_s=1.0)
        return
    snap = asyncio.run(_snapshot(stack, sample))
    if as_json:
        doc = {"data_dir": stack.data_dir, **snap.model_dump(mode="json"),
               "problems": snap.problems()}  # fmt: skip
        print(json.dumps(doc, indent=2))
        return
    from rlstream.stackstatus.render import render_snapshot

    out.print(render_snapshot(snap, title=f"rlstream status ({stack.data_dir})"))
    problems = snap.problems()
    for line in problems:
        out.print(f"problem: {line}", style="yellow", markup=False, highlight=False, soft_wrap=True)
    out.print("all services ready" if not problems else f"{len(problems)} problem(s)",
              style="yellow" if problems else "green", highlight=False)  # fmt: skip
