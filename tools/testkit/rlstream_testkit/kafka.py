"""A single-node KRaft Kafka broker run from the Maven jars in the cache."""

from __future__ import annotations

import asyncio
import base64
import time
import uuid
from pathlib import Path

from .aio import run_sync
from .paths import REPO_ROOT, java_bin, kafka_libs
from .procs import ManagedProcess, free_port, run_checked, tcp_open

JAVA_OPTS = [
    "-Xms256m",
    "-Xmx768m",
    "-XX:+UseSerialGC",
    "-XX:TieredStopAtLevel=1",
    "-Xshare:auto",
    "-Djava.awt.headless=true",
]


class KafkaServer:
    """Broker+controller in one JVM; ``restart`` keeps ports and log dir."""

    def __init__(self, workdir: Path, host: str = "127.0.0.1") -> None:
        """``host``: the listener's address (the cluster tier uses one its pods can route to)."""
        self.workdir = workdir
        self.host = host
        self.port = free_port(host)
        self.ctrl_port = free_port()
        self.bootstrap = f"{host}:{self.port}"
        self.log_path = workdir / "kafka.log"
        self.ready_s = 0.0
        self._props = workdir / "server.properties"
        self._proc: ManagedProcess | None = None

    def _java(self, main: str, *args: str) -> list[str]:
        java = java_bin()
        assert java is not None
        log4j = REPO_ROOT / "tools" / "kafka" / "log4j2.properties"
        return [
            java,
            *JAVA_OPTS,
            f"-Dlog4j2.configurationFile=file:{log4j}",
            f"-Dkafka.logs.dir={self.workdir / 'logs'}",
            "-cp",
            f"{kafka_libs()}/*",
            main,
            *args,
        ]

    def _extra_listeners(self) -> dict[str, int]:
        """name -> port of listeners besides PLAINTEXT (name = protocol; subclasses)."""
        return {}

    def _extra_props(self) -> dict[str, str]:
        return {}

    def _format_args(self) -> list[str]:
        """Extra ``kafka-storage format`` arguments (e.g. ``--add-scram``)."""
        return []

    def _render(self) -> None:
        extra = self._extra_listeners()
        listeners = [f"PLAINTEXT://{self.host}:{self.port}"]
        listeners += [f"{n}://{self.host}:{p}" for n, p in extra.items()]
        protocols = ["PLAINTEXT:PLAINTEXT", *(f"{n}:{n}" for n in extra), "CONTROLLER:PLAINTEXT"]
        props = {
            "process.roles": "broker,controller",
            "node.id": "1",
            "controller.quorum.voters": f"1@127.0.0.1:{self.ctrl_port}",
            "listeners": ",".join([*listeners, f"CONTROLLER://127.0.0.1:{self.ctrl_port}"]),
            "advertised.listeners": ",".join(listeners),
            "controller.listener.names": "CONTROLLER",
            "inter.broker.listener.name": "PLAINTEXT",
            "listener.security.protocol.map": ",".join(protocols),
            "log.dirs": str(self.workdir / "data"),
            "num.partitions": "3",
            # RF 1 on one node, else InitProducerId/FindCoordinator stay unavailable.
            "offsets.topic.replication.factor": "1",
            "offsets.topic.num.partitions": "3",
            "transaction.state.log.replication.factor": "1",
            "transaction.state.log.min.isr": "1",
            "transaction.state.log.num.partitions": "3",
            "share.coordinator.state.topic.replication.factor": "1",
            "share.coordinator.state.topic.min.isr": "1",
            "group.initial.rebalance.delay.ms": "0",
            "log.cleaner.dedupe.buffer.size": "16777216",
            "auto.create.topics.enable": "true",
            **self._extra_props(),
        }
        self._props.write_text("".join(f"{k}={v}\n" for k, v in props.items()))

    def start(self, deadline_s: float = 90.0) -> None:
        t0 = time.monotonic()
        self.workdir.mkdir(parents=True, exist_ok=True)
        if not self._props.exists():
            self._render()
            cluster_id = _cluster_id()
            run_checked(
                self._java(
                    "kafka.tools.StorageTool",
                    "format",
                    "-t",
                    cluster_id,
                    "-c",
                    str(self._props),
                    *self._format_args(),
                ),
                self.log_path,
                timeout=120,
            )
        self._proc = ManagedProcess(
            "kafka", self._java("kafka.Kafka", str(self._props)), self.log_path
        )
        self._proc.start()
        self._proc.wait_ready(lambda: tcp_open(self.port, self.host), deadline_s)
        self._proc.wait_ready(self._cluster_ok, deadline_s)
        self.ready_s = time.monotonic() - t0

    def _cluster_ok(self) -> bool:
        from aiokafka.admin import AIOKafkaAdminClient

        async def probe() -> bool:
            admin = AIOKafkaAdminClient(bootstrap_servers=self.bootstrap, request_timeout_ms=3000)
            await admin.start()
            try:
                info = await admin.describe_cluster()
                return bool(info.get("brokers")) and info.get("controller_id", -1) >= 0
            finally:
                await admin.close()

        return run_sync(probe, timeout=10)

    def stop(self) -> None:
        if self._proc is not None:
            self._proc.stop(grace_s=30)
            self._proc = None

    def restart(self) -> None:
        """Stop (SIGTERM) and start the same broker on the same ports and log dir."""
        self.stop()
        self.start()

    def create_topics(self, names: list[str], partitions: int = 3) -> None:
        """Create topics (RF 1); existing ones are left as they are. Waits for leaders."""
        from aiokafka.admin import AIOKafkaAdminClient, NewTopic
        from aiokafka.errors import TopicAlreadyExistsError

        async def go() -> None:
            admin = AIOKafkaAdminClient(bootstrap_servers=self.bootstrap)
            await admin.start()
            try:
                existing = set(await admin.list_topics())
                todo = [NewTopic(n, partitions, 1) for n in names if n not in existing]
                if todo:
                    try:
                        resp = await admin.create_topics(todo)
                    except TopicAlreadyExistsError:
                        resp = None
                    for err in getattr(resp, "topic_errors", None) or []:
                        code = err[1]
                        if code not in (0, 36):  # 36 = TOPIC_ALREADY_EXISTS
                            raise RuntimeError(f"create topic {err[0]} failed: error {code} {err}")
                for _ in range(100):  # until every partition has a leader
                    meta = await admin.describe_topics(list(names))
                    if all(
                        t.get("error_code", 0) == 0
                        and t.get("partitions")
                        and all(p.get("leader", -1) >= 0 for p in t["partitions"])
                        for t in meta
                    ):
                        return
                    await asyncio.sleep(0.1)
                raise RuntimeError(f"topics {names} have no leaders yet")
            finally:
                await admin.close()

        run_sync(go, timeout=60)


def _cluster_id() -> str:
    """A KRaft cluster id: unpadded base64url of a UUID, never starting with '-' (1 in 64
    would, and the storage tool's option parser then reads it as a flag)."""
    while True:
        cid = base64.urlsafe_b64encode(uuid.uuid4().bytes).rstrip(b"=").decode()
        if not cid.startswith("-"):
            return cid
