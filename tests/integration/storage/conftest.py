"""Fixtures for the storage tests: a migrated fresh database per test, a namespaced Redis."""

from __future__ import annotations

import secrets
from collections.abc import AsyncIterator, Callable
from urllib.parse import urlsplit, urlunsplit

import pytest
from redis.asyncio import Redis

from rlstream.storage import RedisState, Store, upgrade


@pytest.fixture
async def migrated_dsn(postgres_dsn_factory: Callable[[], str]) -> str:
    dsn = postgres_dsn_factory()
    await upgrade(dsn)
    return dsn


@pytest.fixture
async def store(migrated_dsn: str) -> AsyncIterator[Store]:
    s = await Store.connect(migrated_dsn, max_size=8)
    try:
        yield s
    finally:
        await s.close()


def _with_db(url: str, db: int) -> str:
    parts = urlsplit(url)
    return urlunsplit(parts._replace(path=f"/{db}"))


@pytest.fixture
async def state(redis_url: str) -> AsyncIterator[RedisState]:
    """RedisState on its own database (15) and a unique namespace, so flushing it in a
    test touches no other test's keys."""
    client = Redis.from_url(_with_db(redis_url, 15))
    st = RedisState(client, namespace=f"t{secrets.token_hex(4)}", ttl_s=3600)
    try:
        yield st
    finally:
        await st.clear()
        await st.close()
