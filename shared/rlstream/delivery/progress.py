"""Is the service making progress? The facts /readyz reports, kept by the batch runner.

A partition is *stalled* when records have been waiting on it (its high watermark past
the last offset this service committed) for ``stall_after_s`` with nothing committed on
it meanwhile. (A partition idle for an hour that just received a record is not stalled.)
That covers a batch retried forever, a consumer task that keeps restarting and a fetch
that keeps failing: each looked healthy before, because nothing failed loudly.

A partition stalled for ``unhealthy_after_s`` also fails liveness (``/healthz``): a stall
that long is not the broker or a slow batch but a process that cannot get past a record,
so the platform should restart it, and the message names the partition and offset.
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from aiokafka import TopicPartition

from rlstream.observability.metrics import STALL_SECONDS, STALLED_PARTITIONS


@dataclass
class Progress:
    service: str = ""
    stall_after_s: float = 60.0
    unhealthy_after_s: float = 600.0
    consumer: Any = None
    dlq_failing: str | None = None
    broker_error: str | None = None
    #: (topic, partition) -> (next offset to commit, monotonic time it last moved)
    _committed: dict[tuple[str, int], tuple[int, float]] = field(default_factory=dict)
    #: (topic, partition) -> monotonic time records were first seen waiting on it
    _waiting: dict[tuple[str, int], float] = field(default_factory=dict)

    def seen(self, records: Sequence[Any]) -> None:
        now = time.monotonic()
        for r in records:
            self._committed.setdefault((r.topic, r.partition), (r.offset, now))

    def committed(self, records: Sequence[Any]) -> None:
        now = time.monotonic()
        for r in records:
            tp = (r.topic, r.partition)
            prev = self._committed.get(tp)
            if prev is None or r.offset + 1 > prev[0]:
                self._committed[tp] = (r.offset + 1, now)

    def stalled(self) -> list[str]:
        """``topic/partition`` for every partition with waiting records and no progress."""
        return [f"{t}/{p}" for t, p, _, _ in self._stalls(self.stall_after_s)]

    def _stalls(self, after_s: float) -> list[tuple[str, int, int, float]]:
        """(topic, partition, next offset, seconds without a commit) past ``after_s``."""
        consumer = self.consumer
        if consumer is None:
            return []
        now = time.monotonic()
        out: list[tuple[str, int, int, float]] = []
        for (topic, part), (offset, at) in list(self._committed.items()):
            if now - at < after_s:
                continue
            try:
                hw = consumer.highwater(TopicPartition(topic, part))
            except Exception:
                continue
            if hw is not None and hw > offset:
                out.append((topic, part, offset, now - at))
        if after_s == self.stall_after_s:  # the readiness probe's call sets the gauges
            STALLED_PARTITIONS.labels(self.service).set(len(out))
            STALL_SECONDS.labels(self.service).set(max((s for *_, s in out), default=0.0))
        return out

    def check(self) -> str | None:
        """Why this service cannot make progress, or None (a Health check)."""
        if self.broker_error:
            return self.broker_error
        if self.dlq_failing:
            return self.dlq_failing
        stalled = self.stalled()
        if stalled:
            return f"partition stalled: {', '.join(stalled[:5])}"
        return None

    def check_live(self) -> str | None:
        """Why this process should be restarted, or None (a Health liveness check)."""
        stalls = self._stalls(self.unhealthy_after_s)
        if not stalls:
            return None
        topic, part, offset, secs = max(stalls, key=lambda s: s[3])
        more = f" (+{len(stalls) - 1} more)" if len(stalls) > 1 else ""
        return f"partition {topic}/{part} stuck at offset {offset} for {secs:.0f}s{more}"
