"""PII in every field of a conversation, and a search of everything the stack wrote for it.

Shared by tests/integration/services/test_pii_everywhere.py and bench/poison.py.
"""

from __future__ import annotations

import asyncio
import base64
import json
from pathlib import Path
from typing import Any

import asyncpg

from rlstream.events import topics
from rlstream_testkit.stack import ALL, DLQS, conversation, read_topic

EMAIL = "jane.doe@example.com"
PHONE = "+1 415 555 0132"
CARD = "4111 1111 1111 1111"
SSN = "123-45-6789"
#: what must not appear anywhere (normalised variants included)
NEEDLES = ("jane.doe", "example.com", "415 555 0132", "4155550132", "4111 1111", "4111111111", SSN)


def pii_conversation(i: int) -> dict[str, Any]:
    c = conversation(f"{EMAIL}-{i}", "t", resolved=i % 2 == 0, agent=f"bot-{EMAIL}")
    c["model"] = f"model-{PHONE}"
    c["agent_version"] = f"v-{SSN}"
    c["metadata"] = {"task_id": f"task-{EMAIL}", f"key {EMAIL}": f"value {CARD}", "n": 1}
    c["outcome"] = {"resolved": i % 2 == 0, f"by {EMAIL}": True}
    c["messages"] += [
        {
            "role": "assistant",
            "content": f"calling for {EMAIL}",
            "tool_calls": [
                {
                    "id": f"call-{EMAIL}",
                    "type": "function",
                    "function": {
                        "name": "lookup",
                        "arguments": json.dumps({f"{EMAIL}": PHONE, "card": CARD}),
                    },
                }
            ],
        },
        {"role": "tool", "tool_call_id": f"call-{EMAIL}", "name": f"n-{EMAIL}", "content": SSN},
        {"role": "assistant", "content": f"Done, {PHONE}, card {CARD}, ssn {SSN}."},
    ]
    return c


def leaks(blob: str) -> list[str]:
    """Each needle found, with 40 characters around it (for the failure message)."""
    low = blob.lower()
    out = []
    for n in NEEDLES:
        i = low.find(n.lower())
        if i >= 0:
            out.append(blob[max(0, i - 40) : i + len(n) + 20])
    return out


def _decoded(value: bytes) -> str:
    """A topic value as text, with DLQ base64 fields decoded too."""
    text = value.decode("utf-8", "replace")
    try:
        doc = json.loads(text)
    except ValueError:
        return text
    if isinstance(doc, dict) and "value_b64" in doc:
        parts = [text, base64.b64decode(doc["value_b64"]).decode("utf-8", "replace")]
        parts += [base64.b64decode(v).decode("utf-8", "replace") for _, v in doc["headers"]]
        if doc.get("key_b64"):
            parts.append(base64.b64decode(doc["key_b64"]).decode("utf-8", "replace"))
        return "\n".join(parts)
    return text


def scan_everything(st: Any, procs: list[Any]) -> dict[str, list[str]]:
    found: dict[str, list[str]] = {}
    tables = asyncio.run(
        _query(st.dsn, "SELECT tablename FROM pg_tables WHERE schemaname = 'public'")
    )
    for (table,) in tables:
        rows = asyncio.run(_query(st.dsn, f'SELECT row_to_json(t)::text FROM "{table}" t'))
        hit = leaks("\n".join(r[0] for r in rows))
        if hit:
            found[f"table {table}"] = hit
    for name in (*ALL, *DLQS):
        if name == topics.CONVERSATIONS_RAW:
            continue  # the input itself
        for r in asyncio.run(read_topic(st.bootstrap, st.topic(name))):
            hit = leaks(_decoded(r.value) + (r.key or b"").decode("utf-8", "replace"))
            hit += leaks(" ".join(f"{k}={v!r}" for k, v in r.headers))
            if hit:
                found.setdefault(f"topic {name}", []).extend(hit)
    for path in Path(st.workdir).rglob("*"):
        if path.is_file():
            hit = leaks(path.read_bytes().decode("utf-8", "replace"))
            hit += leaks(str(path.relative_to(st.workdir)))
            if hit:
                found[f"file {path.relative_to(st.workdir)}"] = hit
    for p in procs:
        hit = leaks(p.http("/metrics")[1])
        if hit:
            found[f"metrics {p.name}"] = hit
    return found


async def _query(dsn: str, sql: str) -> list[Any]:
    conn = await asyncpg.connect(dsn)
    try:
        return list(await conn.fetch(sql))
    finally:
        await conn.close()
