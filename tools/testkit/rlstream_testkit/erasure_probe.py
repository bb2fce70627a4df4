"""One user's conversations among others', and a search of every store for that user.

Shared by the erasure tests (tests/integration/storage/test_pg_erasure.py, the services
test) and ``bench/erase.py``. The user has a customer id and an e-mail address in the
subject fields, the e-mail in the conversation id and in the text, a phone number in the
text; ingest turns each into a placeholder or a keyed stand-in. :func:`needles` lists
every form the user can leave behind (raw values, their stand-ins, the stored ids of the
user's conversations and rollouts, task keys only the user had); :func:`scan` reads every
Postgres table, every Redis key (name and value), every topic and every file below a root.
"""

from __future__ import annotations

import asyncio
import base64
import json
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import Any

import asyncpg

from rlstream.pii import keys
from rlstream_testkit.stack import conversation, read_topic

CUSTOMER = "C-20931"
EMAIL = "jane.doe@example.com"
PHONE = "+1 415 555 0132"
#: the user's conversation ids as the agent sends them (the e-mail makes them PII)
USER_CID = EMAIL + "-conv-{i}"


def user_conversation(
    i: int, task: str, resolved: bool, agent: str = "support-bot"
) -> dict[str, Any]:
    c = conversation(USER_CID.format(i=i), task, resolved, agent=agent)
    c["metadata"] = {**c["metadata"], "customer_id": CUSTOMER, "email": EMAIL}
    c["messages"][1]["content"] += f" Write to {EMAIL} or call {PHONE}, order 7{i:03d}."
    return c


def other_conversation(
    i: int, task: str, resolved: bool, agent: str = "support-bot"
) -> dict[str, Any]:
    c = conversation(f"conv-{i}", task, resolved, agent=agent)
    c["metadata"] = {**c["metadata"], "customer_id": f"C-{10000 + i}"}
    return c


def raw_needles() -> list[str]:
    """The user's raw values and their stand-ins (with this process's key and without)."""
    raw = [CUSTOMER, EMAIL, "jane.doe", "4155550132", "415 555 0132"]
    forms = [keys.stand_in(CUSTOMER), keys.stand_in(EMAIL), keys.unkeyed_stand_in(EMAIL)]
    forms.append(keys.unkeyed_stand_in(CUSTOMER))
    return raw + forms


def needles(extra: Iterable[str] = ()) -> list[str]:
    """Everything to look for: raw values, stand-ins, plus ``extra`` (stored ids)."""
    return sorted({*raw_needles(), *(x for x in extra if x)})


def hits(blob: str, wanted: Sequence[str]) -> list[str]:
    low = blob.lower()
    out = []
    for n in wanted:
        i = low.find(n.lower())
        if i >= 0:
            out.append(f"{n!r} in …{blob[max(0, i - 60) : i + len(n) + 30]}…")
    return out


async def scan_postgres(dsn: str, wanted: Sequence[str]) -> dict[str, list[str]]:
    conn = await asyncpg.connect(dsn)
    try:
        found: dict[str, list[str]] = {}
        tables = await conn.fetch("SELECT tablename FROM pg_tables WHERE schemaname = 'public'")
        for (table,) in tables:
            rows = await conn.fetch(f'SELECT row_to_json(t)::text FROM "{table}" t')
            h = hits("\n".join(r[0] for r in rows), wanted)
            if h:
                found[f"table {table}"] = h
        return found
    finally:
        await conn.close()


async def scan_redis(redis: Any, wanted: Sequence[str]) -> dict[str, list[str]]:
    """Every key of the Redis database: its name and its value (strings, hashes, sets)."""
    found: dict[str, list[str]] = {}
    async for raw in redis.scan_iter(count=1000):
        key = raw.decode() if isinstance(raw, bytes) else raw
        kind = (await redis.type(key)).decode()
        if kind == "string":
            value = str(await redis.get(key))
        elif kind == "hash":
            value = str(await redis.hgetall(key))
        elif kind == "set":
            value = str(await redis.smembers(key))
        else:
            value = kind
        h = hits(key + " " + value, wanted)
        if h:
            found[f"redis {key}"] = h
    return found


def _decoded(value: bytes | None) -> str:
    if value is None:
        return ""
    text = value.decode("utf-8", "replace")
    try:
        doc = json.loads(text)
    except ValueError:
        return text
    if isinstance(doc, dict) and "value_b64" in doc:
        return text + "\n" + base64.b64decode(doc["value_b64"]).decode("utf-8", "replace")
    return text


async def scan_topics(
    bootstrap: str, names: Sequence[str], wanted: Sequence[str]
) -> dict[str, list[str]]:
    found: dict[str, list[str]] = {}
    for name in names:
        for r in await read_topic(bootstrap, name):
            h = hits(_decoded(r.value) + " " + (r.key or b"").decode("utf-8", "replace"), wanted)
            if h:
                found.setdefault(f"topic {name}", []).extend(h[:3])
    return found


def scan_files(root: Path, wanted: Sequence[str]) -> dict[str, list[str]]:
    found: dict[str, list[str]] = {}
    for path in sorted(root.rglob("*")):
        if path.is_file() and not path.is_symlink():
            rel = str(path.relative_to(root))
            h = hits(path.read_bytes().decode("utf-8", "replace") + " " + rel, wanted)
            if h:
                found[f"file {rel}"] = h
    return found


def scan_sync(coro: Any) -> Any:
    return asyncio.run(coro)
