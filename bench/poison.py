"""Poison: every hostile-record attack of issue 12 against the real stack, with good
conversations interleaved, then an account of every input.

Attacks: binary header values and non-UTF-8 header keys, records near each size limit
(900 KB invalid JSON, a ~1 MB conversation, 25,000 messages, 200-deep nesting), nesting
just under orjson's 1,024 levels (1,000-1,020, PII at the bottom) and far past it (5,000),
8 KB conversation, tool-call and agent ids (issue 24), ReDoS-shaped
text (PEM-header floods, digit runs, e-mail runs), PII in every field, identical repeats
and conflicting versions of one conversation id. Each good conversation must end scored
exactly once and each poison record dead-lettered; no partition may be left with waiting
records; no PII may be found in any table, output topic, file, log line or /metrics page.
The last line is machine-readable:

    poison: good=N scored=S dlq=D lost=L stalled_partitions=P pii_leaks=K

    .venv/bin/python bench/poison.py --n 1000
"""

from __future__ import annotations

import argparse
import asyncio
import json
import random
import threading
import time
import urllib.request
from collections import Counter
from typing import Any

import asyncpg
import orjson
from aiokafka import AIOKafkaConsumer, AIOKafkaProducer, TopicPartition
from aiokafka.admin import AIOKafkaAdminClient
from aiokafka.producer import message_accumulator, producer
from aiokafka.record import default_records

from _services import Stack, conversation, read_topic, release_env, start_stack
from rlstream.delivery.dlq import safe_dlq_key
from rlstream.events import topics
from rlstream.limits import bounded_id
from rlstream.pii import keys
from rlstream.pii.fields import safe_id
from rlstream_testkit.stack import TEST_PII_KEY

Rec = tuple[bytes, bytes, list[tuple[str, bytes]]]


class _RawKey(str):
    raw: bytes = b""

    def encode(self, *args: Any, **kwargs: Any) -> bytes:  # type: ignore[override]
        return self.raw


def bad_key(raw: bytes) -> str:
    k = _RawKey("x")
    k.raw = raw
    return k


def _nested(depth: int) -> Any:
    v: Any = 1
    for _ in range(depth):
        v = {"a": v}
    return v


def attacks(rng: random.Random) -> tuple[list[Rec], list[Rec], list[tuple[Rec, Rec]]]:
    """(good records that must be scored, poison records that must be dead-lettered,
    (first, conflicting) version pairs)."""
    from rlstream_testkit.pii_probe import pii_conversation

    good: list[Rec] = []
    poison: list[Rec] = []

    def conv(cid: str, **extra: Any) -> dict[str, Any]:
        return conversation(cid, f"atk{rng.randrange(20)}", rng.random() < 0.5) | extra

    for i in range(5):  # binary header values on valid conversations: must be scored
        c = conv(f"hv{i}")
        good.append((f"hv{i}".encode(), orjson.dumps(c), [("trace", b"\xff\x00\xfe")]))
    for i in range(3):  # header keys that are not UTF-8: unreadable, dead-lettered
        poison.append(
            (f"hk{i}".encode(), orjson.dumps(conv(f"hk{i}")), [(bad_key(b"\xff\xfe"), b"1")])
        )
    poison.append((b"big-invalid", b"{" + b"x" * 900_000, []))
    huge = conv("big-valid")
    huge["messages"][-1]["content"] = "word " * 195_000  # ~1 MB: its scored event cannot fit
    poison.append((b"big-valid", orjson.dumps(huge), []))
    many = conv("many-messages")
    many["messages"] = [{"role": "user", "content": "x"}] * 25_000
    poison.append((b"many-messages", orjson.dumps(many), []))
    deep = conv("deep") | {"metadata": {"task_id": "t", "x": _nested(200)}}
    poison.append((b"deep", orjson.dumps(deep), []))
    for levels in (1000, 1010, 1020, 5000):  # orjson parses these up to 1,024 levels
        body = orjson.dumps(conv(f"deep{levels}") | {"metadata": "HOLE"})
        nest = b'{"a":' * levels + b'"mail jane.doe@example.com"' + b"}" * levels
        poison.append((f"deep{levels}".encode(), body.replace(b'"HOLE"', nest), []))
    long_id = "L" * 8192  # over-long ids: digested at ingest, scored
    good.append((long_id.encode(), orjson.dumps(conv(long_id)), []))
    long_call = conv("long-call")
    long_call["messages"][2]["tool_calls"] = [
        {"id": "k" * 8192, "type": "function", "function": {"name": "f", "arguments": "{}"}}
    ]
    good.append((b"long-call", orjson.dumps(long_call), []))
    good.append((b"long-agent", orjson.dumps(conv("long-agent", agent="a" * 8192)), []))
    redos = {
        "redos-pem": "-----BEGIN PRIVATE KEY-----" * 18_000,  # ~490 KB
        "redos-digits": "1 " * 200_000,
        "redos-email": "ab@cd.ef " * 40_000,
        "redos-phone": "(0" * 150_000,
    }
    for cid, text in redos.items():  # valid conversations with hostile text: scored
        c = conv(cid)
        c["messages"][1]["content"] = text
        good.append((cid.encode(), orjson.dumps(c), []))
    for i in range(5):  # PII in every field: scored, and no trace of the PII anywhere
        c = pii_conversation(i)
        good.append((c["conversation_id"].encode(), orjson.dumps(c), []))
    for i in range(5):  # identical repeats: scored once
        body = orjson.dumps(conv(f"dd{i}"))
        good.append((f"dd{i}".encode(), body, []))
        good += [(f"dd{i}".encode(), body, [])] * 2
    pairs = []
    for i in range(5):  # the same id with another outcome: the first wins, the second DLQ
        a = conversation(f"cv{i}", "conflict", resolved=True)
        b = conversation(f"cv{i}", "conflict", resolved=False)
        pairs.append(
            ((f"cv{i}".encode(), orjson.dumps(a), []), (f"cv{i}".encode(), orjson.dumps(b), []))
        )
    return good, poison, pairs


async def send(bootstrap: str, topic: str, records: list[Rec]) -> None:
    prod = AIOKafkaProducer(
        bootstrap_servers=bootstrap, linger_ms=5, acks="all", max_request_size=8 << 20
    )
    await prod.start()
    try:
        futs = [await prod.send(topic, value=v, key=k, headers=h) for k, v, h in records]
        await asyncio.gather(*futs)
    finally:
        await prod.stop()


async def q(dsn: str, sql: str) -> list[asyncpg.Record]:
    conn = await asyncpg.connect(dsn)
    try:
        return list(await conn.fetch(sql))
    finally:
        await conn.close()


def dlq_keys(st: Stack) -> Counter[str]:
    out: Counter[str] = Counter()
    for t in (topics.CONVERSATIONS_RAW, topics.TRANSCRIPTS, topics.SCORED):
        for r in asyncio.run(read_topic(st.bootstrap, st.topic(topics.dlq(t)), 10)):
            out[(r.key or b"").decode("utf-8", "replace")] += 1
    return out


async def stalled(st: Stack) -> list[str]:
    """Partitions where a service's committed offset is behind the end of its input."""
    admin = AIOKafkaAdminClient(bootstrap_servers=st.bootstrap)
    cons = AIOKafkaConsumer(bootstrap_servers=st.bootstrap)
    await admin.start()
    await cons.start()
    out = []
    try:
        for service, topic in (
            ("ingest", topics.CONVERSATIONS_RAW),
            ("grader", topics.TRANSCRIPTS),
            ("curator", topics.SCORED),
        ):
            name = st.topic(topic)
            parts = cons.partitions_for_topic(name) or set()
            if not parts:
                await cons._client.force_metadata_update()
                parts = cons.partitions_for_topic(name) or set()
            tps = [TopicPartition(name, p) for p in sorted(parts)]
            end = await cons.end_offsets(tps)
            committed = await admin.list_consumer_group_offsets(f"{st.prefix}rlstream-{service}")
            for tp in tps:
                meta = committed.get(tp)
                done = meta.offset if meta is not None and meta.offset >= 0 else 0
                if end[tp] > done:
                    out.append(f"{service}:{name}/{tp.partition} lag={end[tp] - done}")
    finally:
        await cons.stop()
        await admin.close()
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--n", type=int, default=1000, help="good conversations interleaved")
    ap.add_argument("--settle", type=float, default=300.0, help="max wait for the backlog")
    ap.add_argument("--seed", type=int, default=12)
    ap.add_argument(
        "--services-pythonpath",
        default="",
        help="run the services from another checkout's shared:services (before/after)",
    )
    a = ap.parse_args()
    rng = random.Random(a.seed)
    for mod in (message_accumulator, producer):  # lets a header key be non-UTF-8 bytes
        mod.DefaultRecordBatchBuilder = default_records._DefaultRecordBatchBuilderPy  # type: ignore[attr-defined]

    servers, st = start_stack(
        release_env(200, 10, 1)
        | {"RLSTREAM_BATCH_MAX_RECORDS": "200"}
        | ({"PYTHONPATH": a.services_pythonpath} if a.services_pythonpath else {})
    )
    # the expected ids below are the services' keyed stand-ins
    keys.configure(keys.Pseudonymiser(TEST_PII_KEY.encode()))
    try:
        st.create_topics()
        procs = st.start("ingest", "grader", "curator")
        good, poison, pairs = attacks(rng)
        good += [
            (
                f"c{i}".encode(),
                orjson.dumps(conversation(f"c{i}", f"task{i % 50}", rng.random() < 0.5)),
                [],
            )
            for i in range(a.n)
        ]
        recs = good + poison + [p[0] for p in pairs]
        rng.shuffle(recs)
        for first, second in pairs:  # the conflicting version after the first one
            at = recs.index(first)
            recs.insert(rng.randrange(at + 1, len(recs) + 1), second)
        want_scored = {bounded_id(safe_id(k.decode()) or "") for k, _, _ in good} | {
            safe_id(p[0][0].decode()) for p in pairs
        }
        want_dlq = Counter((safe_dlq_key(k) or b"").decode() for k, _, _ in poison)
        want_dlq.update(p[1][0].decode() for p in pairs)
        print(
            f"poison: {len(recs)} records: {a.n} plain good, {len(good) - a.n} good under attack, "
            f"{len(poison)} poison, {len(pairs)} conflicting versions"
        )

        slow: list[float] = []
        stop = threading.Event()

        def probe() -> None:  # the health server must answer while ingest chews on attacks
            while not stop.is_set():
                for p in procs:
                    t = time.monotonic()
                    try:
                        urllib.request.urlopen(f"http://127.0.0.1:{p.port}/healthz", timeout=5)
                    except Exception:
                        slow.append(99.0)
                        continue
                    slow.append(time.monotonic() - t)
                time.sleep(0.5)

        th = threading.Thread(target=probe, daemon=True)
        th.start()
        started = time.monotonic()
        chunks = 10
        size = (len(recs) + chunks - 1) // chunks
        for i in range(chunks):
            asyncio.run(
                send(
                    st.bootstrap,
                    st.topic(topics.CONVERSATIONS_RAW),
                    recs[i * size : (i + 1) * size],
                )
            )
        deadline = time.monotonic() + a.settle
        while True:
            scored_ids = {
                r[0] for r in asyncio.run(q(st.dsn, "SELECT conversation_id FROM rollouts"))
            }
            dlq = dlq_keys(st)
            pending = len(want_scored - scored_ids) + sum((want_dlq - dlq).values())
            if pending == 0 or time.monotonic() > deadline:
                break
            time.sleep(2)
        elapsed = time.monotonic() - started
        time.sleep(5)  # commits, a last release
        stop.set()
        th.join()
        scored_ids = {r[0] for r in asyncio.run(q(st.dsn, "SELECT conversation_id FROM rollouts"))}
        dlq = dlq_keys(st)
        scored = len(want_scored & scored_ids)
        dead = sum((want_dlq & dlq).values())
        lost = len(want_scored) - scored + sum(want_dlq.values()) - dead
        stuck = asyncio.run(stalled(st))
        from rlstream_testkit.pii_probe import scan_everything

        leaks = scan_everything(st, procs)
        reasons: Counter[str] = Counter()
        for t in (topics.CONVERSATIONS_RAW, topics.TRANSCRIPTS, topics.SCORED):
            for r in asyncio.run(read_topic(st.bootstrap, st.topic(topics.dlq(t)), 10)):
                reasons[json.loads(r.value)["error_code"]] += 1
        restarts = {p.name: p.starts - 1 for p in procs}
        print(
            f"poison: settled in {elapsed:.0f} s; dlq reasons {dict(reasons)}; restarts {restarts}"
        )
        print(
            f"poison: /healthz probes {len(slow)}, slowest {max(slow, default=0):.2f} s, "
            f"failed {sum(s >= 99 for s in slow)}"
        )
        for where in stuck:
            print(f"poison: stalled {where}")
        for where, found in leaks.items():
            print(f"poison: PII in {where}: {found[:2]}")
        print(
            f"poison: good={len(want_scored)} scored={scored} dlq={dead} lost={lost} "
            f"stalled_partitions={len(stuck)} pii_leaks={len(leaks)}"
        )
    finally:
        st.stop_all()
        servers.stop_all()


if __name__ == "__main__":
    main()
