"""Gather a :class:`StatusSnapshot` of a running stack from its own sources.

Services: their pid and health port. Topics and lag: Kafka end offsets against each
consumer group's committed offsets. Scored per second: the scored topic's growth between
two snapshots (the broker's count, so a restarted grader does not reset it). Pool, runs,
evaluations: the system of record (read-only queries of :mod:`rlstream.storage`). Dead
letters: the tail of every DLQ topic. Each source runs under a timeout and a failure
becomes that section's ``unavailable`` reason, never an exception.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Awaitable
from datetime import UTC, datetime
from typing import Any, TypeVar

from rlstream.errors import RlstreamError
from rlstream.events import topics as contract
from rlstream.settings import Settings, load_settings
from rlstream.stackstatus.http_probe import probe_service
from rlstream.stackstatus.kafka_probe import KafkaProbe, TopicOffsets
from rlstream.stackstatus.model import (
    ConsumerLag,
    DeadLettersSection,
    EvaluationsSection,
    PoolSection,
    RunsSection,
    ServiceStatus,
    StackLike,
    StatusSnapshot,
    TopicsSection,
    TopicStatus,
)

T = TypeVar("T")

#: the contract topic each service consumes (services/*/app.py)
SERVICE_INPUT = {
    "ingest": contract.CONVERSATIONS_RAW,
    "grader": contract.TRANSCRIPTS,
    "curator": contract.SCORED,
    "evaluator": contract.TRAINING,
}


def why(exc: BaseException) -> str:
    """One short line for a failed source."""
    if isinstance(exc, TimeoutError):
        return "no answer in time"
    text = str(exc).strip().splitlines()[0] if str(exc).strip() else ""
    if isinstance(exc, RlstreamError) and text:
        return text[:300]
    return f"{type(exc).__name__}: {text}"[:300] if text else type(exc).__name__


def _physical(stack: StackLike, name: str) -> str | None:
    """The stack's topic for a contract name (the stack may prefix every topic)."""
    for physical in stack.topics.values():
        if physical == name or physical.endswith("." + name) or physical.endswith(name):
            return physical
    return None


class StatusCollector:
    """Holds the clients between snapshots (the live view asks every second)."""

    def __init__(
        self,
        stack: StackLike,
        settings: Settings | None = None,
        *,
        timeout_s: float = 5.0,
        recent: int = 5,
        dead_letters: int = 8,
    ) -> None:
        self.stack = stack
        base = settings if settings is not None else load_settings()
        self.settings = base.model_copy(update={"kafka_bootstrap": stack.kafka_bootstrap})
        self.timeout_s = timeout_s
        self.recent, self.n_letters = recent, dead_letters
        self.kafka = KafkaProbe(self.settings, timeout_s)
        self._store: Any = None
        self._redis: Any = None

    async def aclose(self) -> None:
        await self.kafka.close()
        await self._drop_store()
        if self._redis is not None:
            r, self._redis = self._redis, None
            await _quiet(r.aclose())

    async def _guard(self, aw: Awaitable[T]) -> tuple[T | None, str | None]:
        try:
            return await asyncio.wait_for(aw, self.timeout_s * 3), None
        except asyncio.CancelledError:
            raise
        except Exception as exc:
            return None, why(exc)

    async def collect(self, previous: StatusSnapshot | None = None) -> StatusSnapshot:
        t0 = time.monotonic()
        now = datetime.now(UTC)
        services, kafka, pg, redis = await asyncio.gather(
            asyncio.gather(*(probe_service(n, ep) for n, ep in self.stack.services.items())),
            self._guard(self._kafka_side()),
            self._guard(self._postgres_side()),
            self._guard(self._redis_ping()),
        )
        kafka_err, pg_err = kafka[1], pg[1]
        if kafka[0] is not None:
            topics_sec, letters = kafka[0]
        else:
            await _quiet(self.kafka.close())
            topics_sec = TopicsSection(unavailable=kafka_err)
            letters = DeadLettersSection(unavailable=kafka_err)
        if pg[0] is not None:
            pool, runs, evals = pg[0]
        else:
            await self._drop_store()
            pool = PoolSection(unavailable=pg_err)
            runs = RunsSection(unavailable=pg_err)
            evals = EvaluationsSection(unavailable=pg_err)
        topics_sec = _with_rates(topics_sec, previous, now)
        scored = self._scored(topics_sec)
        rate = None
        if scored is not None and previous is not None and previous.scored_total is not None:
            dt = (now - previous.taken_at).total_seconds()
            rate = max(0, scored - previous.scored_total) / dt if dt > 0 else None
        servers = (
            _server("kafka", kafka_err),
            _server("postgres", pg_err),
            _server("redis", redis[1]) if self.stack.redis_url else None,
        )
        return StatusSnapshot(
            taken_at=now,
            stack_state=getattr(self.stack, "state", None),
            services=(*services, *(s for s in servers if s is not None)),
            topics=topics_sec,
            scored_total=scored,
            scored_per_s=rate,
            pool=pool,
            runs=runs,
            evaluations=evals,
            dead_letters=letters,
            collect_s=round(time.monotonic() - t0, 3),
        )

    def _scored(self, sec: TopicsSection) -> int | None:
        name = self.stack.topics.get("scored") or _physical(self.stack, contract.SCORED)
        for t in sec.items:
            if t.name == name and t.exists:
                return t.produced
        return None

    async def _kafka_side(self) -> tuple[TopicsSection, DeadLettersSection]:
        named = {k: v for k, v in self.stack.topics.items()}
        dlqs = {f"{k}.dlq": contract.dlq(v) for k, v in named.items() if not v.endswith(".dlq")}
        offsets = await self.kafka.offsets([*named.values(), *dlqs.values()])
        lags: dict[str, list[ConsumerLag]] = {}
        for svc, group in self.stack.consumer_groups.items():
            done = await self.kafka.committed(group)
            read = {t for t, _ in done}
            own = (
                _physical(self.stack, SERVICE_INPUT.get(svc, "")) if svc in SERVICE_INPUT else None
            )
            for name in sorted(read | ({own} if own else set())):
                o = offsets.get(name)
                if o is not None:
                    lags.setdefault(name, []).append(_lag(svc, group, o, done, name))
        items = [_topic(k, v, offsets.get(v), lags.get(v, [])) for k, v in named.items()]
        items += [
            _topic(k, v, offsets[v], lags.get(v, []), dead_letter=True)
            for k, v in dlqs.items()
            if v in offsets and v not in named.values()
        ]
        dlq_offsets = {
            t.name: offsets[t.name] for t in items if t.name.endswith(".dlq") and t.exists
        }
        total = sum(o.produced - sum(o.begin.values()) for o in dlq_offsets.values())
        recent = await self.kafka.dead_letters(dlq_offsets, self.n_letters)
        return TopicsSection(items=tuple(items)), DeadLettersSection(
            total=total, recent=tuple(recent)
        )

    async def _postgres_side(self) -> tuple[PoolSection, RunsSection, EvaluationsSection]:
        dsn = self.stack.postgres_dsn
        if not dsn:
            raise RlstreamError("no postgres_dsn in the stack description")
        if self._store is None:
            from rlstream.storage import Store

            self._store = await Store.connect(dsn, min_size=1, max_size=2)
        counts = await self._store.pool_counts()
        by_status, runs = await self._store.recent_runs(self.recent)
        by_decision, evals = await self._store.recent_evaluations(self.recent)
        return (
            PoolSection(counts=counts),
            RunsSection(by_status=by_status, recent=tuple(runs)),
            EvaluationsSection(by_decision=by_decision, recent=tuple(evals)),
        )

    async def _redis_ping(self) -> None:
        if not self.stack.redis_url:
            return
        if self._redis is None:
            from rlstream.storage.redisconnect import redis_client

            self._redis = redis_client(self.stack.redis_url)
        try:
            await self._redis.ping()
        except Exception as exc:
            from rlstream.storage.redisconnect import redis_error

            raise redis_error(exc) from exc

    async def _drop_store(self) -> None:
        store, self._store = self._store, None
        if store is not None:
            await _quiet(store.close())


def _lag(
    svc: str, group: str, o: TopicOffsets, done: dict[tuple[str, int], int], name: str
) -> ConsumerLag:
    """A partition the group never committed counts from its first retained offset."""
    at = {p: done.get((name, p), o.begin[p]) for p in o.end}
    return ConsumerLag(
        group=group,
        service=svc,
        consumed=sum(at.values()),
        lag=sum(max(0, e - at[p]) for p, e in o.end.items()),
    )


def _server(name: str, err: str | None) -> ServiceStatus:
    return ServiceStatus(name=name, kind="server", ready=err is None, reason=err)


def _topic(
    key: str,
    name: str,
    o: TopicOffsets | None,
    consumers: list[ConsumerLag],
    *,
    dead_letter: bool = False,
) -> TopicStatus:
    if o is None:
        return TopicStatus(key=key, name=name, exists=False, dead_letter=name.endswith(".dlq"))
    return TopicStatus(
        key=key,
        name=name,
        partitions=len(o.end),
        produced=o.produced,
        consumers=tuple(consumers),
        dead_letter=dead_letter or name.endswith(".dlq"),
    )


def _with_rates(
    sec: TopicsSection, previous: StatusSnapshot | None, now: datetime
) -> TopicsSection:
    if previous is None or previous.topics.unavailable or not sec.items:
        return sec
    dt = (now - previous.taken_at).total_seconds()
    before = {t.name: t.produced for t in previous.topics.items if t.exists}
    if dt <= 0:
        return sec
    items = tuple(
        t.model_copy(update={"produced_per_s": max(0, t.produced - before[t.name]) / dt})
        if t.exists and t.name in before
        else t
        for t in sec.items
    )
    return sec.model_copy(update={"items": items})


async def _quiet(aw: Awaitable[Any]) -> None:
    try:
        await asyncio.wait_for(aw, 5)
    except Exception:
        return
