"""Assertions on the pipeline's durable state (Postgres) and its topics."""

from __future__ import annotations

import asyncio
import json
import time
from typing import Any

import asyncpg

from rlstream.events import topics


async def pg(dsn: str, sql: str, *args: Any) -> list[asyncpg.Record]:
    conn = await asyncpg.connect(dsn)
    try:
        return list(await conn.fetch(sql, *args))
    finally:
        await conn.close()


def count(dsn: str, sql: str, *args: Any) -> int:
    return int(asyncio.run(pg(dsn, sql, *args))[0][0])


def wait_until(fn: Any, timeout: float = 90.0, every: float = 0.5) -> Any:
    deadline = time.monotonic() + timeout
    last = None
    while time.monotonic() < deadline:
        last = fn()
        if last:
            return last
        time.sleep(every)
    return last


def dlq_codes(records: list[Any]) -> list[str]:
    return [json.loads(r.value)["error_code"] for r in records]


def scored_ids(records: list[Any]) -> list[str]:
    return [json.loads(r.value)["rollout_id"] for r in records]


def no_rollout_in_two_datasets(dsn: str) -> None:
    rows = asyncio.run(pg(dsn, "SELECT dataset_id, manifest FROM datasets"))
    seen: dict[str, str] = {}
    for row in rows:
        manifest = row["manifest"]
        if isinstance(manifest, str):
            manifest = json.loads(manifest)
        for rid in asyncio.run(
            pg(dsn, "SELECT rollout_id FROM rollouts WHERE released_in = $1", row["dataset_id"])
        ):
            assert rid[0] not in seen, f"rollout {rid[0]} in two datasets"
            seen[rid[0]] = row["dataset_id"]


__all__ = [
    "count",
    "dlq_codes",
    "no_rollout_in_two_datasets",
    "pg",
    "scored_ids",
    "topics",
    "wait_until",
]
