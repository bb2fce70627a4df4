"""The supervisor behind ``rlstream up``: servers, topics, the four services, clean stop.

Start order: Kafka, PostgreSQL, Redis (each ready before the next), the topics from the
topic table (RF 1), then ingest, grader, curator (local launcher) and evaluator as
``faststream run`` children, each with its health port on loopback. ``stop`` goes in the
reverse order and also ends what the services started in their own process groups (the
local launcher's trainers), so Ctrl-C leaves no process behind. Everything lives under one
data folder; ``stack.json`` in it says where everything is while the stack runs.
"""

from __future__ import annotations

import asyncio
import contextlib
import functools
import json
import os
import secrets
import shutil
import signal
import sys
import time
import urllib.request
from collections.abc import Callable, Mapping
from pathlib import Path

from rlstream.errors import ConfigError
from rlstream.events import topics
from rlstream.localstack.procs import (
    Child,
    LocalStackError,
    descendants,
    free_port,
    port_free,
    signal_group,
    wait_gone,
)
from rlstream.localstack.servers import HOST, KafkaServer, PostgresServer, RedisServer
from rlstream.localstack.stackfile import (
    ServiceEndpoint,
    StackFile,
    now,
    read_stack,
    remove_stack,
    write_stack,
)

SERVICES = ("ingest", "grader", "curator", "evaluator")
#: the stack file's topic keys (the contract names without the rlstream. prefix)
TOPIC_KEYS = {
    "raw": topics.CONVERSATIONS_RAW,
    "transcripts": topics.TRANSCRIPTS,
    "scored": topics.SCORED,
    "releases": topics.DATASETS,
    "training": topics.TRAINING,
    "evaluations": topics.EVALUATIONS,
    "deployments": topics.DEPLOYMENTS,
}
#: the services' settings on a laptop, the same as ``rlstream demo``'s: LoRA SFT on CPU,
#: greedy evaluation of the sample agent's reward. The caller's environment wins.
TUNING = {
    "RLSTREAM_REWARD_SPEC": "tool_calling",
    "RLSTREAM_TRAIN_MAX_STEPS": "20",
    "RLSTREAM_TRAIN_CONFIG": json.dumps(
        {
            "method": "sft",
            "learning_rate": 5e-4,
            "batch_size": 8,
            "max_length": 256,
            "lora_rank": 8,
            "lora_alpha": 16,
            "seed": 7,
            "device": "cpu",
        }
    ),
    "RLSTREAM_EVAL_GREEDY": "true",
    "RLSTREAM_EVAL_MAX_PROMPTS": "150",
    "RLSTREAM_EVAL_MAX_NEW_TOKENS": "48",
    "RLSTREAM_RELEASE_CHECK_INTERVAL_S": "1",
    "RLSTREAM_SESSION_TIMEOUT_MS": "6000",
}
Progress = Callable[[str], None]


def _topics_map() -> dict[str, str]:
    out = dict(TOPIC_KEYS)
    for key, name in TOPIC_KEYS.items():
        if name in (topics.CONVERSATIONS_RAW, topics.TRANSCRIPTS, topics.SCORED, topics.TRAINING):
            out[f"{key}_dlq"] = topics.dlq(name)
    return out


class LocalStack:
    """One single-node stack under ``data_dir`` (``start`` then ``stop``, once)."""

    def __init__(
        self,
        data_dir: Path,
        *,
        fresh: bool = False,
        env: Mapping[str, str] | None = None,
        progress: Progress | None = None,
    ) -> None:
        self.data_dir = data_dir.resolve()
        self.fresh = fresh
        self.extra_env = dict(env or {})
        self.say: Progress = progress or (lambda line: None)
        self.kafka: KafkaServer | None = None
        self.postgres: PostgresServer | None = None
        self.redis: RedisServer | None = None
        self.services: dict[str, Child] = {}
        self.ports: dict[str, int] = {}
        self.stack: StackFile | None = None
        self.started_s = 0.0
        #: every pid this stack started or found under its services (for tests and stop)
        self.seen_pids: set[int] = set()

    # ---- start ---------------------------------------------------------------------------
    def start(self) -> StackFile:
        t0 = time.monotonic()
        self._prepare_dir()
        self._load_ports()
        self.kafka = KafkaServer(self.data_dir / "kafka", self.ports["kafka"], self.ports["kraft"])
        self.postgres = PostgresServer(self.data_dir / "postgres", self.ports["postgres"])
        self.redis = RedisServer(self.data_dir / "redis", self.ports["redis"])
        stack = StackFile(
            pid=os.getpid(), started_at=now(), data_dir=str(self.data_dir),
            kafka_bootstrap=self.kafka.bootstrap, postgres_dsn=self.postgres.dsn,
            redis_url=self.redis.url, topics=_topics_map(),
            consumer_groups={s: f"rlstream-{s}" for s in SERVICES}, state="starting",
        )  # fmt: skip
        self._publish(stack)
        for name, server in (("kafka", self.kafka), ("postgres", self.postgres)):
            t = time.monotonic()
            server.start()
            self._track(server.child)
            self.say(f"{name} ready on {HOST}:{self.ports[name]} ({time.monotonic() - t:.1f} s)")
        t = time.monotonic()
        self.redis.start()
        self._track(self.redis.child)
        self.say(f"redis ready on {self.redis.url} ({time.monotonic() - t:.1f} s)")
        t = time.monotonic()
        n = asyncio.run(self._create_topics())
        self.say(
            f"topics: {n} created or checked from the topic table ({time.monotonic() - t:.1f} s)"
        )
        endpoints = self._start_services()
        self._publish(stack.model_copy(update={"services": endpoints, "state": "ready"}))
        self.started_s = time.monotonic() - t0
        self.say(f"stack ready in {self.started_s:.1f} s; data in {self.data_dir}")
        assert self.stack is not None
        return self.stack

    def _publish(self, stack: StackFile) -> None:
        self.stack = stack
        write_stack(stack)

    def _track(self, child: Child | None) -> None:
        if child is not None and child.proc is not None:
            self.seen_pids.add(child.proc.pid)

    def _prepare_dir(self) -> None:
        try:
            old = read_stack(self.data_dir) if self.data_dir.exists() else None
        except ConfigError:  # a torn or foreign stack.json: no stack is running from it
            old = None
        if old is not None and old.supervisor_alive() and old.pid != os.getpid():
            raise LocalStackError(
                f"a stack is already up on {self.data_dir} (pid {old.pid}); stop it with "
                "Ctrl-C there, or use another --data-dir"
            )
        if self.fresh and self.data_dir.exists():
            shutil.rmtree(self.data_dir)
            self.say(f"--fresh: removed {self.data_dir}")
        self.data_dir.mkdir(parents=True, exist_ok=True)
        key = self.data_dir / "pii.key"
        if not key.exists():  # stand-ins must stay the same from one up to the next
            key.write_text(secrets.token_urlsafe(48))
            key.chmod(0o600)

    def _load_ports(self) -> None:
        """The previous ``up``'s ports where still free (bookmarks keep working), else new."""
        path = self.data_dir / "ports.json"
        try:
            old = {k: int(v) for k, v in json.loads(path.read_text()).items()}
        except (OSError, ValueError, AttributeError):
            old = {}
        for name in ("kafka", "kraft", "postgres", "redis", *SERVICES):
            p = old.get(name)
            taken = set(self.ports.values())
            self.ports[name] = p if p and p not in taken and port_free(p) else free_port()
        path.write_text(json.dumps(self.ports, indent=2) + "\n")

    async def _create_topics(self) -> int:
        from rlstream.delivery.topics import apply_cluster
        from rlstream.events.topic_table import TopicSettings, table_for

        assert self.kafka is not None
        settings = TopicSettings().model_copy(
            update={
                "kafka_bootstrap": self.kafka.bootstrap,
                "topics_replication_factor": 1,
                "topic_prefix": "",
                "topics_overrides_file": None,
            }
        )
        table = table_for(settings)
        deadline = time.monotonic() + 60
        while True:  # the broker answers TCP before its controller is elected
            try:
                await apply_cluster(settings, table)
                return len(table)
            except Exception as exc:
                if time.monotonic() > deadline:
                    raise LocalStackError(f"could not create the topics: {exc}") from exc
                await asyncio.sleep(1)

    def service_env(self, name: str) -> dict[str, str]:
        assert self.kafka and self.postgres and self.redis
        env = {**os.environ}
        for key, value in TUNING.items():
            env.setdefault(key, value)
        env.update(self.extra_env)
        env.update(
            RLSTREAM_KAFKA_BOOTSTRAP=self.kafka.bootstrap,
            RLSTREAM_POSTGRES_DSN=self.postgres.dsn,
            RLSTREAM_REDIS_URL=self.redis.url,
            RLSTREAM_TOPIC_PREFIX="",
            RLSTREAM_HEALTH_HOST=HOST,
            RLSTREAM_HEALTH_PORT=str(self.ports[name]),
            RLSTREAM_DATA_DIR=str(self.data_dir / "work"),
            RLSTREAM_PII_KEY_FILE=str(self.data_dir / "pii.key"),
            RLSTREAM_LAUNCHER="local",
            PYTHONUNBUFFERED="1",
            HF_HUB_OFFLINE="1",
            TOKENIZERS_PARALLELISM="false",
        )
        for key in ("RLSTREAM_PII_KEY", "RLSTREAM_CONSUMER_GROUP", "RLSTREAM_UP_DIR"):
            env.pop(key, None)
        return env

    def _start_services(self) -> dict[str, ServiceEndpoint]:
        logs = self.data_dir / "logs"
        for name in SERVICES:
            argv = [sys.executable, "-m", "faststream", "run", f"rlstream.services.{name}.app:app"]
            child = Child(name, argv, logs / f"{name}.log", env=self.service_env(name))
            child.start()
            self._track(child)
            self.services[name] = child
        t = time.monotonic()
        out: dict[str, ServiceEndpoint] = {}
        for name, child in self.services.items():
            url = f"http://{HOST}:{self.ports[name]}"
            child.wait_ready(functools.partial(_http_ok, url + "/readyz"), 180)
            out[name] = ServiceEndpoint(pid=child.pid, health_url=url, metrics_url=url + "/metrics")
            self.say(f"{name} ready: {url}/readyz (pid {child.pid}, {time.monotonic() - t:.1f} s)")
        return out

    # ---- stop ----------------------------------------------------------------------------
    def stop(self) -> None:
        """Services first (and what they started), then Redis, PostgreSQL, Kafka."""
        if self.stack is not None:
            with contextlib.suppress(OSError):
                self._publish(self.stack.model_copy(update={"state": "stopping"}))
        strays: set[int] = set()
        for child in self.services.values():
            if child.alive():
                strays |= descendants(child.pid)
        self.seen_pids |= strays
        for name in reversed(SERVICES):
            if name in self.services:
                self.services[name].stop()
                self.say(f"{name} stopped")
        groups = set()
        for pid in strays:  # the local launcher's trainers run in groups of their own
            with contextlib.suppress(OSError):
                groups.add(os.getpgid(pid))
        for pgid in groups:
            signal_group(pgid, signal.SIGTERM)
        wait_gone(strays, 20)
        for pgid in groups:
            signal_group(pgid, signal.SIGKILL)
        for name, server in (
            ("redis", self.redis),
            ("postgres", self.postgres),
            ("kafka", self.kafka),
        ):
            if server is not None and server.child is not None:
                server.stop()
                self.say(f"{name} stopped")
        if self.stack is not None:  # ours: a refused start leaves the running stack's file
            remove_stack(self.data_dir)

    def pids(self) -> set[int]:
        return set(self.seen_pids)


def _http_ok(url: str) -> bool:
    with urllib.request.urlopen(url, timeout=2) as r:
        return bool(r.status == 200)
