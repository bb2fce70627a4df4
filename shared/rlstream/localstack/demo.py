"""``rlstream up --demo``: feed the sample conversations, follow them through the topics.

Everything this reports is read back from Kafka (the services' output topics, from the
offsets they had before the feed), never from the services' memory, so it shows where each
step happened: topic, partition, offset; the dataset, the run id, the evaluation id.
"""

from __future__ import annotations

import asyncio
import contextlib
import threading
import time
from collections.abc import Callable
from typing import Any

import orjson
from pydantic import BaseModel, ConfigDict, Field

from rlstream.events import DatasetReleased, DeploymentEvent, EvaluationEvent, TrainingRunEvent
from rlstream.localstack.procs import LocalStackError
from rlstream.localstack.stackfile import StackFile

WATCHED = ("transcripts", "scored", "releases", "training", "evaluations", "deployments")


class Where(BaseModel):
    """One record's place in Kafka."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    topic: str
    partition: int
    offset: int

    def __str__(self) -> str:
        return f"{self.topic} [{self.partition}] @{self.offset}"


class Step(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")

    name: str
    where: Where
    what: str
    seconds: float = Field(description="since the feed started")


class UpDemoResult(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")

    fed: int
    steps: tuple[Step, ...]
    counts: dict[str, int]
    evaluation: EvaluationEvent | None
    failure: str | None = None
    feed_to_decision_s: float


class _Follow:
    """What the watched topics showed so far."""

    def __init__(self, topics: dict[str, str], say: Callable[[str], None]) -> None:
        self.by_topic = {topics[k]: k for k in WATCHED}
        self.say = say
        self.t0 = time.monotonic()
        self.steps: list[Step] = []
        self.counts = dict.fromkeys(WATCHED, 0)
        self.evaluation: EvaluationEvent | None = None
        self.failure: str | None = None
        self.run_ids: set[str] = set()
        self.fed = 0

    def _step(self, name: str, rec: Any, what: str) -> None:
        where = Where(topic=rec.topic, partition=rec.partition, offset=rec.offset)
        step = Step(name=name, where=where, what=what, seconds=time.monotonic() - self.t0)
        self.steps.append(step)
        self.say(f"{step.seconds:6.1f} s  {name:<9} {where}  {what}")

    def take(self, rec: Any) -> None:
        key = self.by_topic.get(rec.topic)
        if key is None:
            return
        self.counts[key] += 1
        if key in ("transcripts", "scored") and self.counts[key] == 1:
            name = "ingest" if key == "transcripts" else "grade"
            self._step(name, rec, f"first {key[:-1]} (key {_key(rec)})")
        elif key == "releases":
            ds = DatasetReleased.model_validate_json(rec.value)
            rows = ds.manifest.get("counts", {})
            self._step("release", rec, f"dataset {ds.dataset_id[:16]} ({rows})")
        elif key == "training":
            ev = TrainingRunEvent.model_validate_json(rec.value)
            self.run_ids.add(ev.run_id)
            extra = f": {ev.reason}" if ev.reason else ""
            self._step("train", rec, f"run {ev.run_id} {ev.state} ({ev.launcher}){extra}")
            if ev.state == "failed" and self.failure is None:
                self.failure = f"training run {ev.run_id} failed: {ev.reason}"
        elif key == "evaluations":
            ev2 = EvaluationEvent.model_validate_json(rec.value)
            self._step("evaluate", rec, f"evaluation {ev2.evaluation_id} -> {ev2.decision}")
            if self.evaluation is None:
                self.evaluation = ev2
        elif key == "deployments":
            dep = DeploymentEvent.model_validate_json(rec.value)
            self._step("deploy", rec, f"{dep.alias} <- model {dep.model_id[:16]} ({dep.kind})")


def _key(rec: Any) -> str:
    return rec.key.decode(errors="replace") if rec.key else "-"


def sample_records(seed: int, n_tasks: int, rollouts: int) -> list[tuple[bytes, bytes]]:
    from rlstream.sampledata.orders import order_records

    recs = order_records(seed, n_tasks, rollouts)
    # OpenAI-format log records: the conversation's id is ``id`` (keyed so a conversation's
    # records share a partition)
    return [(str(r["id"]).encode(), orjson.dumps(r)) for r in recs]


async def run_feed(
    stack: StackFile,
    records: list[tuple[bytes, bytes]],
    *,
    rate: float,
    timeout_s: float,
    stop: threading.Event,
    say: Callable[[str], None],
) -> UpDemoResult:
    """Send ``records`` to the raw topic at ``rate`` per second and follow the output
    topics until the first evaluation (or a failed run, ``timeout_s``, or ``stop``)."""
    from aiokafka import AIOKafkaConsumer, AIOKafkaProducer, TopicPartition

    follow = _Follow(stack.topics, say)
    cons = AIOKafkaConsumer(
        bootstrap_servers=stack.kafka_bootstrap, enable_auto_commit=False, group_id=None
    )
    await cons.start()
    try:
        # partitions_for_topic reads the client's cached metadata, which topics() leaves
        # empty for topics the consumer does not subscribe to: refresh it first
        await cons._client.force_metadata_update()
        tps = [
            TopicPartition(stack.topics[k], p)
            for k in WATCHED
            for p in sorted(cons.partitions_for_topic(stack.topics[k]) or ())
        ]
        if not tps:
            raise LocalStackError("the stack's topics are missing; start it with --fresh")
        cons.assign(tps)
        for tp, off in (await cons.end_offsets(tps)).items():  # only what this feed causes
            cons.seek(tp, off)
        feeder = asyncio.create_task(_feed(stack, records, rate, stop, follow, AIOKafkaProducer))
        deadline = time.monotonic() + timeout_s
        try:
            while follow.evaluation is None and follow.failure is None and not stop.is_set():
                if time.monotonic() > deadline:
                    follow.failure = f"no decision within {timeout_s:.0f} s"
                    break
                failed = feeder.exception() if feeder.done() else None
                if failed is not None:
                    raise failed
                for recs in (await cons.getmany(timeout_ms=500)).values():
                    for rec in recs:
                        follow.take(rec)
        finally:
            feeder.cancel()
            with contextlib.suppress(BaseException):
                await feeder
        if follow.evaluation is not None:  # a promotion's deployment event follows it
            for recs in (await cons.getmany(timeout_ms=3000)).values():
                for rec in recs:
                    follow.take(rec)
    finally:
        await cons.stop()
    return UpDemoResult(
        fed=follow.fed,
        steps=tuple(follow.steps),
        counts=follow.counts,
        evaluation=follow.evaluation,
        failure=None if follow.evaluation else (follow.failure or "stopped"),
        feed_to_decision_s=round(time.monotonic() - follow.t0, 1),
    )


async def _feed(
    stack: StackFile,
    records: list[tuple[bytes, bytes]],
    rate: float,
    stop: threading.Event,
    follow: _Follow,
    producer_cls: Any,
) -> None:
    prod = producer_cls(bootstrap_servers=stack.kafka_bootstrap, acks="all", linger_ms=5)
    await prod.start()
    try:
        per_tick = max(1, int(rate / 10))
        first = last = None
        t0 = time.monotonic()
        for i in range(0, len(records), per_tick):
            if stop.is_set():
                return
            batch = records[i : i + per_tick]
            futs = [await prod.send(stack.topics["raw"], value=v, key=k) for k, v in batch]
            metas = await asyncio.gather(*futs)
            follow.fed += len(metas)
            if first is None:
                first = metas[0]
                follow._step("feed", first, f"first of {len(records):,} sample conversations")
            last = metas[-1]
            ahead = (i + per_tick) / rate - (time.monotonic() - t0)
            if ahead > 0:
                await asyncio.sleep(ahead)
        if last is not None:
            follow._step("feed", last, f"last of {follow.fed:,}, at {rate:g}/s")
    finally:
        await prod.stop()
