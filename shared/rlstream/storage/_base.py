"""Pool creation and row conversion shared by the Store mixins."""

from __future__ import annotations

from typing import Any, cast

import asyncpg
import orjson

from rlstream.storage.pgconnect import CONNECT_ERRORS, check_ssl_files, connect_error


def dumps(value: Any) -> str:
    """JSON text for a jsonb parameter (asyncpg's jsonb codec takes str)."""
    return orjson.dumps(value).decode()


async def _init_connection(conn: asyncpg.Connection) -> None:
    await conn.set_type_codec(
        "jsonb", encoder=dumps, decoder=orjson.loads, schema="pg_catalog", format="text"
    )


async def create_pool(dsn: str, *, min_size: int = 1, max_size: int = 10) -> asyncpg.Pool:
    """An asyncpg pool whose jsonb columns decode to Python values."""
    check_ssl_files(dsn)
    try:
        pool = await asyncpg.create_pool(
            dsn, min_size=min_size, max_size=max_size, init=_init_connection
        )
    except CONNECT_ERRORS as exc:
        raise connect_error(exc) from exc
    return cast(asyncpg.Pool, pool)


class StoreBase:
    """Holds the pool; each mixin adds one family of operations."""

    def __init__(self, pool: asyncpg.Pool) -> None:
        self._pool = pool

    @property
    def pool(self) -> asyncpg.Pool:
        return self._pool

    async def ping(self) -> bool:
        """True when Postgres answers (for readiness probes)."""
        try:
            return bool(await self._pool.fetchval("SELECT 1"))
        except (OSError, asyncpg.PostgresError, asyncpg.InterfaceError):
            return False

    async def close(self) -> None:
        await self._pool.close()
