"""Run rlstream services as real subprocesses against real servers (tests and benches).

Each service is ``python -m faststream run rlstream.services.<name>.app:app`` with its own
environment (topic prefix, database, Redis namespace, health port), exactly as deployed.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import signal
import socket
import subprocess
import sys
import time
import urllib.request
import uuid
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import Any

from aiokafka import AIOKafkaConsumer, AIOKafkaProducer, TopicPartition

from rlstream.events import topics

ALL = (
    topics.CONVERSATIONS_RAW,
    topics.TRANSCRIPTS,
    topics.SCORED,
    topics.DATASETS,
    topics.TRAINING,
    topics.EVALUATIONS,
    topics.DEPLOYMENTS,
)
DLQS = tuple(
    topics.dlq(t)
    for t in (topics.CONVERSATIONS_RAW, topics.TRANSCRIPTS, topics.SCORED, topics.TRAINING)
)

#: the PII key every stack service gets (services refuse to start without one); a test that
#: computes the stand-ins a service makes configures ``rlstream.pii.keys`` with it
TEST_PII_KEY = "rlstream-testkit-pii-key-not-a-secret-0123456789"


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


class ServiceProc:
    def __init__(self, name: str, env: dict[str, str], log_path: Path) -> None:
        self.name = name
        self.env = env
        self.log_path = log_path
        self.port = int(env["RLSTREAM_HEALTH_PORT"])
        self.proc: subprocess.Popen[bytes] | None = None
        self.starts = 0

    def start(self) -> None:
        log = open(self.log_path, "ab")  # noqa: SIM115 - handed to the child
        self.proc = subprocess.Popen(
            [sys.executable, "-m", "faststream", "run", f"rlstream.services.{self.name}.app:app"],
            env=self.env,
            stdout=log,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )
        log.close()
        self.starts += 1

    def http(self, path: str) -> tuple[int, str]:
        try:
            with urllib.request.urlopen(f"http://127.0.0.1:{self.port}{path}", timeout=2) as r:
                return r.status, r.read().decode()
        except urllib.error.HTTPError as e:
            return e.code, e.read().decode()

    def wait_ready(self, timeout: float = 60.0) -> None:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self.proc is not None and self.proc.poll() is not None:
                raise RuntimeError(f"{self.name} exited rc={self.proc.returncode}\n{self.tail()}")
            with contextlib.suppress(OSError):
                if self.http("/readyz")[0] == 200:
                    return
            time.sleep(0.2)
        raise TimeoutError(f"{self.name} not ready after {timeout}s\n{self.tail()}")

    def alive(self) -> bool:
        return self.proc is not None and self.proc.poll() is None

    def kill(self, sig: int = signal.SIGKILL) -> None:
        if self.proc is not None and self.proc.poll() is None:
            os.killpg(self.proc.pid, sig)
            with contextlib.suppress(subprocess.TimeoutExpired):
                self.proc.wait(30)
            if self.proc.poll() is None:
                os.killpg(self.proc.pid, signal.SIGKILL)
                self.proc.wait(10)

    def stop(self) -> None:
        self.kill(signal.SIGTERM)

    def tail(self, n: int = 40) -> str:
        try:
            return "\n".join(self.log_path.read_text(errors="replace").splitlines()[-n:])
        except OSError:
            return ""


class Stack:
    """Topics under a unique prefix, one database, one Redis namespace, N services."""

    def __init__(
        self,
        bootstrap: str,
        dsn: str,
        redis_url: str | None,
        workdir: Path,
        env: dict[str, str] | None = None,
        prefix: str | None = None,
    ) -> None:
        self.bootstrap = bootstrap
        self.dsn = dsn
        self.redis_url = redis_url
        self.workdir = workdir
        self.prefix = prefix or f"t{uuid.uuid4().hex[:8]}."
        self.extra_env = env or {}
        self.procs: list[ServiceProc] = []
        workdir.mkdir(parents=True, exist_ok=True)

    def topic(self, name: str) -> str:
        return self.prefix + name

    def env_for(self, name: str, **extra: str) -> dict[str, str]:
        env = {k: v for k, v in os.environ.items() if not k.startswith("RLSTREAM_")}
        env.update(
            RLSTREAM_KAFKA_BOOTSTRAP=self.bootstrap,
            RLSTREAM_POSTGRES_DSN=self.dsn,
            RLSTREAM_TOPIC_PREFIX=self.prefix,
            RLSTREAM_REDIS_NAMESPACE=self.prefix.rstrip("."),
            RLSTREAM_HEALTH_HOST="127.0.0.1",
            RLSTREAM_HEALTH_PORT=str(free_port()),
            RLSTREAM_DATA_DIR=str(self.workdir / "data"),
            RLSTREAM_LOG_LEVEL="INFO",
            RLSTREAM_SESSION_TIMEOUT_MS="6000",
            RLSTREAM_PII_KEY=TEST_PII_KEY,
            PYTHONUNBUFFERED="1",
        )
        if self.redis_url:
            env["RLSTREAM_REDIS_URL"] = self.redis_url
        env.update(self.extra_env)
        env.update(extra)
        return env

    def create_topics(self, partitions: int = 3) -> None:
        from aiokafka.admin import AIOKafkaAdminClient, NewTopic

        async def go() -> None:
            admin = AIOKafkaAdminClient(bootstrap_servers=self.bootstrap)
            await admin.start()
            try:
                names = [self.topic(t) for t in (*ALL, *DLQS)]
                await admin.create_topics([NewTopic(n, partitions, 1) for n in names])
            finally:
                await admin.close()

        asyncio.run(go())

    def service(self, name: str, **extra: str) -> ServiceProc:
        idx = sum(p.name == name for p in self.procs)
        proc = ServiceProc(name, self.env_for(name, **extra), self.workdir / f"{name}-{idx}.log")
        self.procs.append(proc)
        return proc

    def start(self, *names: str, timeout: float = 90.0) -> list[ServiceProc]:
        procs = [self.service(n) for n in names]
        for p in procs:
            p.start()
        for p in procs:
            p.wait_ready(timeout)
        return procs

    def stop_all(self) -> None:
        for p in self.procs:
            with contextlib.suppress(Exception):
                p.stop()


async def produce(
    bootstrap: str, topic: str, records: Iterable[tuple[bytes | None, bytes]]
) -> list[tuple[int, int, float]]:
    """Send (key, value) records; return (partition, offset, send_time) per record."""
    prod = AIOKafkaProducer(
        bootstrap_servers=bootstrap, linger_ms=5, acks="all", max_request_size=8 << 20
    )
    await prod.start()
    try:
        futs = []
        times = []
        for key, value in records:
            times.append(time.time())
            futs.append(await prod.send(topic, value=value, key=key))
        metas = await asyncio.gather(*futs)
        return [(m.partition, m.offset, t) for m, t in zip(metas, times, strict=True)]
    finally:
        await prod.stop()


async def read_topic(bootstrap: str, topic: str, timeout: float = 5.0) -> list[Any]:
    """Everything currently in ``topic`` (all partitions, from the beginning)."""
    cons = AIOKafkaConsumer(
        bootstrap_servers=bootstrap,
        enable_auto_commit=False,
        auto_offset_reset="earliest",
        group_id=None,
    )
    await cons.start()
    try:
        parts = cons.partitions_for_topic(topic) or set()
        if not parts:
            await cons._client.force_metadata_update()
            parts = cons.partitions_for_topic(topic) or set()
        tps = [TopicPartition(topic, p) for p in sorted(parts)]
        if not tps:
            return []
        cons.assign(tps)
        end = await cons.end_offsets(tps)
        await cons.seek_to_beginning(*tps)
        out: list[Any] = []
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if all([await _pos(cons, tp) >= end[tp] for tp in tps]):
                break
            batch = await cons.getmany(timeout_ms=200)
            for recs in batch.values():
                out.extend(recs)
        return out
    finally:
        await cons.stop()


async def _pos(cons: AIOKafkaConsumer, tp: TopicPartition) -> int:
    return int(await cons.position(tp))


async def wait_for_count(
    bootstrap: str, topic: str, n: int, timeout: float = 60.0, predicate: Any = None
) -> list[Any]:
    deadline = time.monotonic() + timeout
    recs: list[Any] = []
    while time.monotonic() < deadline:
        recs = await read_topic(bootstrap, topic)
        got = [r for r in recs if predicate(r)] if predicate else recs
        if len(got) >= n:
            return recs
        await asyncio.sleep(0.5)
    return recs


_WORDS = [
    "order",
    "parcel",
    "refund",
    "invoice",
    "address",
    "courier",
    "delay",
    "tracking",
    "label",
    "warehouse",
    "replacement",
    "voucher",
    "apology",
    "account",
    "password",
    "billing",
    "upgrade",
    "plan",
    "cancel",
    "renewal",
    "discount",
    "shipping",
    "customs",
    "battery",
    "screen",
    "charger",
    "warranty",
    "repair",
    "ticket",
    "escalate",
    "manager",
    "weekend",
    "monday",
    "confirm",
    "email",
    "phone",
    "number",
    "reference",
    "status",
    "update",
    "carrier",
    "depot",
    "missing",
    "damaged",
    "box",
    "signature",
    "neighbour",
    "locker",
    "pickup",
    "store",
    "credit",
    "card",
    "payment",
    "declined",
    "retry",
    "verify",
    "code",
]


def _reply(cid: str) -> str:
    import random

    rng = random.Random(cid)
    return " ".join(rng.choice(_WORDS) for _ in range(30)) + "."


def conversation(cid: str, task: str, resolved: bool, agent: str = "support-bot") -> dict[str, Any]:
    """A canonical conversation the ``outcome`` reward can grade (varied replies, so
    curation's duplicate filters keep them)."""
    return {
        "conversation_id": cid,
        "agent": agent,
        "messages": [
            {"role": "system", "content": "You are a helpful support agent."},
            {"role": "user", "content": f"Please help with task {task}: my order is late."},
            {"role": "assistant", "content": _reply(cid)},
        ],
        "metadata": {"task_id": task},
        "outcome": {"resolved": resolved},
    }


def encode(records: Sequence[dict[str, Any]]) -> list[tuple[bytes, bytes]]:
    import orjson

    return [(r["conversation_id"].encode(), orjson.dumps(r)) for r in records]
