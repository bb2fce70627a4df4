"""Migrations: applied once, idempotent, safe when several services upgrade at once."""

from __future__ import annotations

import asyncio
from collections.abc import Callable

import asyncpg
import pytest

from rlstream.storage import MigrationError, current, latest_version, upgrade

pytestmark = pytest.mark.postgres

TABLES = {
    "schema_migrations", "transcripts", "rollouts", "groups", "datasets", "lineage_edges",
    "runs", "evaluations", "models", "model_aliases", "promotions", "turn_buffers",
}  # fmt: skip


async def _tables(dsn: str) -> set[str]:
    conn = await asyncpg.connect(dsn)
    try:
        rows = await conn.fetch("SELECT tablename FROM pg_tables WHERE schemaname = 'public'")
        return {r[0] for r in rows}
    finally:
        await conn.close()


async def test_upgrade_applies_all_then_nothing(postgres_dsn_factory: Callable[[], str]) -> None:
    dsn = postgres_dsn_factory()
    assert await current(dsn) is None
    applied = await upgrade(dsn)
    assert applied == list(range(1, latest_version() + 1))
    assert await _tables(dsn) >= TABLES
    assert await upgrade(dsn) == []
    assert await current(dsn) == latest_version()


async def test_concurrent_upgrades_apply_each_migration_once(
    postgres_dsn_factory: Callable[[], str],
) -> None:
    dsn = postgres_dsn_factory()
    results = await asyncio.gather(*(upgrade(dsn) for _ in range(6)))
    flat = sorted(v for r in results for v in r)
    assert flat == list(range(1, latest_version() + 1))  # each version by exactly one caller
    conn = await asyncpg.connect(dsn)
    try:
        assert await conn.fetchval("SELECT count(*) FROM schema_migrations") == latest_version()
    finally:
        await conn.close()


async def test_edited_migration_is_refused(postgres_dsn_factory: Callable[[], str]) -> None:
    dsn = postgres_dsn_factory()
    await upgrade(dsn)
    conn = await asyncpg.connect(dsn)
    try:
        await conn.execute("UPDATE schema_migrations SET sha256 = 'x' WHERE version = 1")
    finally:
        await conn.close()
    with pytest.raises(MigrationError, match="changed after it was applied"):
        await upgrade(dsn)
