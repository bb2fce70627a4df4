"""What ``rlstream status`` reports: one frozen snapshot of a running local stack.

Why one model for the table, the live view and ``--json``: the three must never disagree.
Every section carries ``unavailable`` (the reason its source could not be read) instead of
raising, so a dead broker or database shows as a marked cell, never a crash.
"""

from __future__ import annotations

from collections.abc import Mapping
from datetime import datetime
from typing import Protocol

from pydantic import BaseModel, ConfigDict

from rlstream.storage import EvaluationSummary, PoolCounts, RunSummary


class ServiceEndpoints(Protocol):
    """One supervised service as ``stack.json`` describes it."""

    @property
    def pid(self) -> int | None: ...
    @property
    def health_url(self) -> str | None: ...
    @property
    def metrics_url(self) -> str | None: ...


class StackLike(Protocol):
    """The parts of ``stack.json`` (schema 1, written by ``rlstream up``) the collector reads."""

    @property
    def kafka_bootstrap(self) -> str: ...
    @property
    def postgres_dsn(self) -> str | None: ...
    @property
    def redis_url(self) -> str | None: ...
    @property
    def topics(self) -> Mapping[str, str]: ...
    @property
    def services(self) -> Mapping[str, ServiceEndpoints]: ...
    @property
    def consumer_groups(self) -> Mapping[str, str]: ...


class _Frozen(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")


class ServiceStatus(_Frozen):
    """A supervised service (pid, /healthz, /readyz, /metrics totals) or a server
    (``kind="server"``: kafka, postgres, redis: reachable or not)."""

    name: str
    kind: str = "service"
    pid: int | None = None
    alive: bool | None = None
    healthy: bool | None = None
    ready: bool | None = None
    #: why not healthy / ready / reachable, or why it could not be asked
    reason: str | None = None
    consumed: float | None = None
    published: float | None = None
    dead_lettered: float | None = None

    @property
    def state(self) -> str:
        """One word: ready, not ready, unhealthy, down, up, unreachable, unknown."""
        if self.kind == "server":
            return "unknown" if self.ready is None else "up" if self.ready else "unreachable"
        if self.alive is False:
            return "down"
        if self.healthy is False:
            return "unhealthy"
        if self.ready is None:
            return "unknown"
        return "ready" if self.ready else "not ready"


class ConsumerLag(_Frozen):
    group: str
    service: str | None
    consumed: int  # records committed by the group (its offsets summed)
    lag: int  # produced and not yet committed by the group


class TopicStatus(_Frozen):
    key: str  # the stack's name for it (raw, transcripts, ...), or the DLQ topic's
    name: str
    exists: bool = True
    partitions: int = 0
    produced: int = 0  # records written so far (end offsets summed)
    produced_per_s: float | None = None  # since the previous snapshot
    consumers: tuple[ConsumerLag, ...] = ()
    dead_letter: bool = False


class DeadLetter(_Frozen):
    at: str  # dlq topic/partition/offset
    source: str  # where the rejected record was: topic/partition/offset
    failed_at: datetime | None
    service: str
    code: str
    reason: str


class Section(_Frozen):
    unavailable: str | None = None


class TopicsSection(Section):
    items: tuple[TopicStatus, ...] = ()


class PoolSection(Section):
    counts: PoolCounts | None = None


class RunsSection(Section):
    by_status: dict[str, int] = {}
    recent: tuple[RunSummary, ...] = ()


class EvaluationsSection(Section):
    by_decision: dict[str, int] = {}
    recent: tuple[EvaluationSummary, ...] = ()


class DeadLettersSection(Section):
    total: int = 0
    recent: tuple[DeadLetter, ...] = ()  # newest first


class StatusSnapshot(_Frozen):
    taken_at: datetime
    stack_state: str | None = None
    services: tuple[ServiceStatus, ...] = ()
    topics: TopicsSection = TopicsSection()
    #: rollouts the grader published onto the scored topic per second since the previous
    #: snapshot (None on the first one, or when Kafka could not be read)
    scored_per_s: float | None = None
    scored_total: int | None = None
    pool: PoolSection = PoolSection()
    runs: RunsSection = RunsSection()
    evaluations: EvaluationsSection = EvaluationsSection()
    dead_letters: DeadLettersSection = DeadLettersSection()
    collect_s: float = 0.0  # how long gathering took

    def problems(self) -> list[str]:
        """One line per thing that is not fine (for scripts: empty means all ready)."""
        out = [f"{s.name}: {s.state}" + (f" ({s.reason})" if s.reason else "")
               for s in self.services if s.state not in ("ready", "up")]  # fmt: skip
        for name, sec in (
            ("topics", self.topics),
            ("pool", self.pool),
            ("runs", self.runs),
            ("evaluations", self.evaluations),
            ("dead letters", self.dead_letters),
        ):
            if sec.unavailable:
                out.append(f"{name}: unavailable: {sec.unavailable}")
        return out
