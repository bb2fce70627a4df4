"""``rlstream up``: the whole streaming stack on this machine, until Ctrl-C.

Kafka (KRaft), PostgreSQL and Redis on loopback, the topics from the topic table, and
ingest, grader, curator (local launcher) and evaluator as supervised processes; the work
is :class:`rlstream.localstack.supervisor.LocalStack`. ``--demo`` feeds the sample
conversations and follows them through the topics to the first gate decision.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import signal
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from types import FrameType
from typing import Any

import typer
from rich.markup import escape

from rlstream.localstack.demo import UpDemoResult, run_feed, sample_records
from rlstream.localstack.stackfile import StackFile, default_data_dir
from rlstream.localstack.supervisor import LocalStack
from rlstream.services.cli.common import console, friendly_errors


def _say(line: str) -> None:
    console.print(
        f"[dim]{time.strftime('%H:%M:%S')}[/] {escape(line)}", highlight=False, soft_wrap=True
    )


def _sigterm(signum: int, frame: FrameType | None) -> None:
    raise KeyboardInterrupt  # SIGTERM stops the stack the way Ctrl-C does


@contextlib.contextmanager
def _live_view(st: StackFile, live: bool) -> Iterator[None]:
    """The live status view below the progress lines while the block runs (``--no-live``:
    none). Lines printed on the same console scroll above it."""
    if not live:
        yield
        return
    from rlstream.stackstatus.live import run_live_view

    stop = threading.Event()
    thread = threading.Thread(
        target=run_live_view, args=(st, stop), kwargs={"console": console}, daemon=True
    )
    thread.start()
    try:
        yield
    finally:
        stop.set()
        thread.join(5)


def _wait(stack: LocalStack, st: StackFile, live: bool) -> None:
    """Until Ctrl-C (or a service exits: the stack is then stopped, not left half up)."""
    _say("running; Ctrl-C stops everything (data kept; --fresh starts over)")
    with _live_view(st, live):
        while True:
            dead = [n for n, c in stack.services.items() if not c.alive()]
            if dead:
                raise typer.Exit(_died(stack, dead))
            time.sleep(1)


def _died(stack: LocalStack, names: list[str]) -> int:
    for n in names:
        c = stack.services[n]
        rc = c.proc.returncode if c.proc else "?"
        console.print(f"{n} exited (rc {rc}); log {c.log_path}", markup=False, soft_wrap=True)
    return 1


def _summary(result: UpDemoResult, total_s: float, stack_s: float) -> None:
    ev = result.evaluation
    if ev is None:
        console.print(f"\n[red]no decision[/]: {escape(str(result.failure))}", soft_wrap=True)
        return
    report = _report(ev.report_path)
    d = report.get("delta") or {}
    if report and d:
        console.print(
            f"\nheld-out pass@1: baseline {report['baseline']['pass_at_1']:.3f} → candidate "
            f"{report['candidate']['pass_at_1']:.3f}; {d['metric']} gain {d['mean']:+.3f} over "
            f"{d['n_prompts']} prompts never trained on ({d['test']}, one-sided p "
            f"{d['p_value']:.2g})",
            soft_wrap=True,
        )
    colour = {"promote": "green", "reject": "red"}.get(ev.decision, "yellow")
    console.print(f"decision: [bold {colour}]{ev.decision}[/]  model {ev.model_id}")
    for reason in ev.reasons:
        console.print(f"  reason: {reason}", markup=False, highlight=False, soft_wrap=True)
    console.print("where each step happened (topic [partition] @offset):")
    for s in result.steps:
        line = f"  {s.seconds:6.1f} s  {s.name:<9} {s.where}  {s.what}"
        console.print(line, markup=False, highlight=False, soft_wrap=True)
    console.print(
        f"evaluation {ev.evaluation_id}, run {ev.run_id}; report → {ev.report_path}",
        markup=False,
        soft_wrap=True,
    )
    console.print(
        f"time from start to decision: {total_s:.0f} s (stack up {stack_s:.0f} s, first "
        f"conversation to decision {result.feed_to_decision_s:.0f} s)"
    )
    if ev.decision == "promote":
        console.print(f"trace it: rlstream lineage {ev.model_id}")


def _report(path: str | None) -> dict[str, Any]:
    import orjson

    if not path:
        return {}
    try:
        data = orjson.loads(Path(path).read_bytes())
    except (OSError, orjson.JSONDecodeError):
        return {}
    return data if isinstance(data, dict) else {}


@friendly_errors
def up(
    demo: bool = typer.Option(
        False, "--demo", help="feed the sample conversations; stop at the first gate decision"
    ),
    fresh: bool = typer.Option(False, "--fresh", help="delete the data folder first"),
    data_dir: Path | None = typer.Option(
        None, "--data-dir", help="default: RLSTREAM_UP_DIR, else .rlstream/up"
    ),
    rate: float = typer.Option(50.0, "--rate", min=0.1, help="--demo: conversations per second"),
    tasks: int = typer.Option(400, "--tasks", min=10, help="--demo: sample tasks"),
    rollouts: int = typer.Option(3, "--rollouts", min=1, help="--demo: conversations per task"),
    seed: int = typer.Option(7, "--seed", help="--demo: sample-data seed"),
    timeout: float = typer.Option(3600.0, "--timeout", help="--demo: seconds to wait"),
    stay: bool = typer.Option(False, "--stay", help="--demo: keep running after the decision"),
    no_live: bool = typer.Option(False, "--no-live", help="plain progress lines, no live view"),
) -> None:
    """Start Kafka, PostgreSQL, Redis and the four services on this machine (loopback only),
    until Ctrl-C; the data stays in one folder for the next `up`.

    Example: rlstream up --demo   (then: rlstream up, to keep the loop running)
    """
    t0 = time.monotonic()
    folder = data_dir or default_data_dir()
    env: dict[str, str] = {}
    n = tasks * rollouts
    if demo and "RLSTREAM_RELEASE_MIN_ROLLOUTS" not in os.environ:
        env["RLSTREAM_RELEASE_MIN_ROLLOUTS"] = str(max(20, int(0.75 * n)))  # one release
    stack = LocalStack(folder, fresh=fresh, env=env, progress=_say)
    # Ctrl-C must stop the stack even when SIGINT arrives ignored (a shell without job control
    # starts background commands with SIGINT ignored, and Python then installs no handler)
    signal.signal(signal.SIGINT, signal.default_int_handler)
    old = signal.signal(signal.SIGTERM, _sigterm)
    code = 0
    try:
        st = stack.start()
        if demo:
            _say(f"feeding {n:,} sample conversations to {st.topics['raw']} at {rate:g}/s")
            with _live_view(st, live=not no_live):  # the loop turning, under the step lines
                result = asyncio.run(
                    run_feed(
                        st, sample_records(seed, tasks, rollouts), rate=rate, timeout_s=timeout,
                        stop=threading.Event(), say=_say,
                    )
                )  # fmt: skip
            _summary(result, time.monotonic() - t0, stack.started_s)
            code = 0 if result.evaluation is not None else 1
            if stay:
                _wait(stack, st, live=not no_live)
        else:
            _wait(stack, st, live=not no_live)
    except KeyboardInterrupt:
        _say("stopping (Ctrl-C)")
    finally:
        signal.signal(signal.SIGINT, signal.SIG_IGN)  # a second Ctrl-C must not orphan
        signal.signal(signal.SIGTERM, signal.SIG_IGN)
        try:
            stack.stop()
        finally:
            signal.signal(signal.SIGINT, signal.default_int_handler)
            signal.signal(signal.SIGTERM, old)
        if stack.seen_pids:
            _say(f"stopped; data kept in {stack.data_dir}")
    if code:
        raise typer.Exit(code)
