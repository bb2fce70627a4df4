"""Versioned schema migrations: ``NNNN_name.sql`` files shipped as package data.

Each file runs once, in its own transaction, recorded in ``schema_migrations`` with its
sha256. A session-level advisory lock serialises concurrent ``upgrade`` calls, so several
services starting at once apply each migration exactly once.

Migrations only go forward. A database carrying a migration this code does not know (a
newer release migrated it; this is a rollback) is refused with one line rather than used:
the old code would read and write tables whose meaning changed. Where migrations run as a
deployment step (the chart's hook Job), services call :func:`prepare_schema` with
``migrate=False`` and only check.
"""

from __future__ import annotations

import hashlib
import re
from dataclasses import dataclass
from importlib import resources

import asyncpg

from rlstream.errors import ConfigError
from rlstream.storage.errors import MigrationError
from rlstream.storage.pgconnect import connect

#: arbitrary, fixed key for pg_advisory_lock (ASCII "rlstrmig")
ADVISORY_LOCK_KEY = 0x726C7374726D6967
_NAME = re.compile(r"^(\d{4})_([a-z0-9_]+)\.sql$")

_BOOTSTRAP = """
CREATE TABLE IF NOT EXISTS schema_migrations (
    version     integer PRIMARY KEY,
    name        text NOT NULL,
    sha256      text NOT NULL,
    applied_at  timestamptz NOT NULL DEFAULT now()
)
"""


@dataclass(frozen=True)
class Migration:
    version: int
    name: str
    sql: str

    @property
    def sha256(self) -> str:
        return hashlib.sha256(self.sql.encode()).hexdigest()


def load_migrations() -> list[Migration]:
    """The packaged migrations in version order; gaps or duplicates are a packaging bug."""
    found: list[Migration] = []
    for entry in resources.files("rlstream.storage").joinpath("migrations").iterdir():
        m = _NAME.match(entry.name)
        if m:
            found.append(Migration(int(m.group(1)), m.group(2), entry.read_text("utf-8")))
    found.sort(key=lambda mig: mig.version)
    versions = [mig.version for mig in found]
    if versions != list(range(1, len(found) + 1)):
        raise MigrationError(f"migration versions must be 1..N without gaps: {versions}")
    return found


async def _applied(conn: asyncpg.Connection) -> dict[int, str]:
    exists = await conn.fetchval("SELECT to_regclass('schema_migrations') IS NOT NULL")
    if not exists:
        return {}
    rows = await conn.fetch("SELECT version, sha256 FROM schema_migrations")
    return {int(r["version"]): str(r["sha256"]) for r in rows}


class SchemaNewerError(ConfigError):
    """The database holds migrations this code does not know: a newer release migrated it."""

    code = "schema_newer"


class SchemaBehindError(ConfigError):
    """Migrations are pending and this process was told not to apply them."""

    code = "schema_behind"


def _refuse_unknown(applied: dict[int, str], known: list[Migration]) -> None:
    unknown = sorted(set(applied) - {m.version for m in known})
    if unknown:
        newest = known[-1].version if known else 0
        raise SchemaNewerError(
            f"database schema is newer than this code: migration(s) "
            f"{', '.join(f'{v:04d}' for v in unknown)} applied, this code knows up to "
            f"{newest:04d}; run the release that applied them, or restore the database "
            "(docs/deploy.md, rollback)"
        )


async def upgrade(dsn: str) -> list[int]:
    """Apply every pending migration; return the versions this call applied.

    Refuses to run when an applied migration's file no longer matches its recorded hash
    (editing history silently would make two databases with the same version differ), and
    when the database holds a migration this code does not know (:class:`SchemaNewerError`).
    """
    conn = await connect(dsn)
    try:
        await conn.execute("SELECT pg_advisory_lock($1)", ADVISORY_LOCK_KEY)
        try:
            await conn.execute(_BOOTSTRAP)
            applied = await _applied(conn)
            known = load_migrations()
            _refuse_unknown(applied, known)
            done: list[int] = []
            for mig in known:
                if mig.version in applied:
                    if applied[mig.version] != mig.sha256:
                        raise MigrationError(
                            f"migration {mig.version:04d}_{mig.name} changed after it was applied"
                        )
                    continue
                try:
                    async with conn.transaction():
                        await conn.execute(mig.sql)
                        await conn.execute(
                            "INSERT INTO schema_migrations (version, name, sha256)"
                            " VALUES ($1, $2, $3)",
                            mig.version,
                            mig.name,
                            mig.sha256,
                        )
                except asyncpg.PostgresError as exc:
                    raise MigrationError(
                        f"migration {mig.version:04d}_{mig.name} failed: {exc}"
                    ) from exc
                done.append(mig.version)
            return done
        finally:
            await conn.execute("SELECT pg_advisory_unlock($1)", ADVISORY_LOCK_KEY)
    finally:
        await conn.close()


async def current(dsn: str) -> int | None:
    """The highest applied version, or None on a database never upgraded."""
    conn = await connect(dsn)
    try:
        applied = await _applied(conn)
        return max(applied) if applied else None
    finally:
        await conn.close()


def latest_version() -> int:
    """The version ``upgrade`` would bring a database to."""
    return load_migrations()[-1].version


async def check_schema(dsn: str) -> int:
    """Refuse a database that is not exactly at this code's version; return the version.

    For processes that must not migrate (the chart's hook Job does it before they start).
    """
    conn = await connect(dsn)
    try:
        applied = await _applied(conn)
    finally:
        await conn.close()
    known = load_migrations()
    _refuse_unknown(applied, known)
    pending = [m for m in known if m.version not in applied]
    if pending:
        have = max(applied) if applied else None
        raise SchemaBehindError(
            f"database schema is at {'none' if have is None else f'{have:04d}'}, this code "
            f"needs {known[-1].version:04d} and RLSTREAM_MIGRATE_ON_START is false: run "
            "`rlstream db upgrade` (the chart's migration hook Job) first"
        )
    for mig in known:
        if applied[mig.version] != mig.sha256:
            raise MigrationError(
                f"migration {mig.version:04d}_{mig.name} changed after it was applied"
            )
    return known[-1].version


async def prepare_schema(dsn: str, *, migrate: bool = True) -> None:
    """At a service's start: apply pending migrations, or (``migrate=False``) only check.

    Either way a schema newer than this code stops the start with one line.
    """
    if migrate:
        await upgrade(dsn)
    else:
        await check_schema(dsn)
