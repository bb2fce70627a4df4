"""Versioned schema migrations: ``NNNN_name.sql`` files shipped as package data.

Each file runs once, in its own transaction, recorded in ``schema_migrations`` with its
sha256. A session-level advisory lock serialises concurrent ``upgrade`` calls, so several
services starting at once apply each migration exactly once.
"""

from __future__ import annotations

import hashlib
import re
from dataclasses import dataclass
from importlib import resources

import asyncpg

from rlstream.storage.errors import MigrationError

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


async def upgrade(dsn: str) -> list[int]:
    """Apply every pending migration; return the versions this call applied.

    Refuses to run when an applied migration's file no longer matches its recorded hash:
    editing history silently would make two databases with the same version differ.
    """
    conn = await asyncpg.connect(dsn)
    try:
        await conn.execute("SELECT pg_advisory_lock($1)", ADVISORY_LOCK_KEY)
        try:
            await conn.execute(_BOOTSTRAP)
            applied = await _applied(conn)
            done: list[int] = []
            for mig in load_migrations():
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
    conn = await asyncpg.connect(dsn)
    try:
        applied = await _applied(conn)
        return max(applied) if applied else None
    finally:
        await conn.close()


def latest_version() -> int:
    """The version ``upgrade`` would bring a database to."""
    return load_migrations()[-1].version
