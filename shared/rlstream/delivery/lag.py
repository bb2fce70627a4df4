"""Keep ``rlstream_consumer_lag`` fresh while no batch arrives.

The runner sets the gauge from each batch it handles; a consumer that gets nothing (a
stuck fetch, a rebalance that never settles, a paused partition) then shows its last
batch's lag for ever, exactly when the lag matters. This refresher reads, every few
seconds, each assigned partition's end offset and the group's committed offset (end minus
committed: what is produced and not yet done), and drops the gauge's series of partitions
no longer assigned to this pod (another pod reports them).
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import Callable
from typing import Any

from rlstream.observability.metrics import CONSUMER_LAG

log = logging.getLogger("rlstream.delivery")


class LagRefresher:
    """One per consuming service; ``consumer`` returns the aiokafka consumer (or None)."""

    def __init__(self, service: str, consumer: Callable[[], Any], interval_s: float = 5.0) -> None:
        self.service = service
        self.consumer = consumer
        self.interval_s = interval_s
        self._shown: set[tuple[str, int]] = set()
        self._task: asyncio.Task[None] | None = None

    async def tick(self, timeout_s: float = 10.0) -> dict[tuple[str, int], int]:
        """Refresh the gauge once; returns (topic, partition) -> lag as set."""
        consumer = self.consumer()
        if consumer is None:
            return {}
        assigned = sorted(consumer.assignment(), key=lambda tp: (tp.topic, tp.partition))
        out: dict[tuple[str, int], int] = {}
        if assigned:
            ends = await asyncio.wait_for(consumer.end_offsets(assigned), timeout_s)
            starts: dict[Any, int] = {}
            for tp in assigned:
                done = await asyncio.wait_for(consumer.committed(tp), timeout_s)
                if done is None:  # nothing committed yet: everything retained is to do
                    if not starts:
                        starts = await asyncio.wait_for(
                            consumer.beginning_offsets(assigned), timeout_s
                        )
                    done = starts[tp]
                lag = max(0, ends[tp] - done)
                out[(tp.topic, tp.partition)] = lag
                CONSUMER_LAG.labels(self.service, tp.topic, str(tp.partition)).set(lag)
        for topic, part in self._shown - set(out):
            with contextlib.suppress(KeyError):
                CONSUMER_LAG.remove(self.service, topic, str(part))
        self._shown = set(out)
        return out

    async def run(self) -> None:
        while True:
            try:
                await self.tick()
            except asyncio.CancelledError:
                raise
            except Exception as exc:  # a rebalance or a broker hiccup: next time
                log.debug("consumer lag refresh failed: %r", exc)
            await asyncio.sleep(self.interval_s)

    def start(self) -> None:
        if self._task is None:
            self._task = asyncio.create_task(self.run(), name=f"lag-{self.service}")

    async def stop(self) -> None:
        if self._task is not None:
            self._task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._task
            self._task = None
