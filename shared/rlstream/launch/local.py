"""``launcher=local``: the trainer service as a child process on this machine.

The default on embedded settings (a laptop). The child inherits this process's
environment (the same Postgres, Kafka and topic prefix; ``TRACEPARENT`` of the launch
span when tracing is on), records and publishes its own
states, and writes ``trainer.log`` into its run folder. A marker file claimed with
``O_EXCL`` makes a second launch of the same dataset a no-op, across restarts too. The
parent reports the child's exit code as a backstop for a trainer that died before it
could report (killed, out of memory).
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import sys
from pathlib import Path

import orjson

from rlstream.launch.base import (
    EXIT_BAD_CONFIG,
    TRAINER_MODULE,
    LaunchResult,
    OnUpdate,
    RunSpec,
    RunUpdate,
)
from rlstream.launch.settings import LaunchSettings
from rlstream.observability import tracing

MARKER = "launch.json"


class LocalLauncher:
    name = "local"

    def __init__(self, settings: LaunchSettings | None = None, python: str | None = None) -> None:
        self.settings = settings or LaunchSettings()
        self.python = python or sys.executable
        self._done: asyncio.Queue[tuple[RunSpec, int]] = asyncio.Queue()
        self._waiters: set[asyncio.Task[None]] = set()

    def command(self, spec: RunSpec) -> list[str]:
        return [self.python, "-m", TRAINER_MODULE, *spec.trainer_args()]

    async def launch(self, spec: RunSpec) -> LaunchResult:
        out = Path(spec.output_dir)
        out.mkdir(parents=True, exist_ok=True)
        try:
            fd = os.open(out / MARKER, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o644)
        except FileExistsError:
            return LaunchResult(run_id=spec.run_id, created=False, launcher=self.name)
        with os.fdopen(fd, "wb") as f:
            f.write(
                orjson.dumps({"spec": spec.model_dump(mode="json"), "argv": self.command(spec)})
            )
        trace_env = tracing.env_for_child()  # the launch span: the trainer continues it
        with open(out / "trainer.log", "ab") as log:
            proc = await asyncio.create_subprocess_exec(
                *self.command(spec),
                env={**os.environ, **trace_env} if trace_env else None,
                stdin=asyncio.subprocess.DEVNULL,
                stdout=log,
                stderr=asyncio.subprocess.STDOUT,
                start_new_session=True,  # a curator restart does not kill a running trainer
            )
        task = asyncio.create_task(self._wait(spec, proc))
        self._waiters.add(task)
        task.add_done_callback(self._waiters.discard)
        return LaunchResult(
            run_id=spec.run_id, created=True, launcher=self.name, handle=f"pid {proc.pid}"
        )

    async def _wait(self, spec: RunSpec, proc: asyncio.subprocess.Process) -> None:
        await self._done.put((spec, await proc.wait()))

    async def follow(self, on_update: OnUpdate) -> None:
        while True:
            spec, rc = await self._done.get()
            if rc == 0:
                await on_update(RunUpdate(run_id=spec.run_id, state="succeeded", spec=spec))
                continue
            what = "bad configuration" if rc == EXIT_BAD_CONFIG else "trainer failed"
            reason = f"{what}: exit code {rc} (see {Path(spec.output_dir) / 'trainer.log'})"
            await on_update(RunUpdate(run_id=spec.run_id, state="failed", reason=reason, spec=spec))

    async def close(self) -> None:
        """Stop waiting; running trainers keep running (their own reports still arrive)."""
        for t in list(self._waiters):
            t.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await t
