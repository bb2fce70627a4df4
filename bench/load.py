"""Sustained end-to-end throughput and latency: raw conversations -> scored rollouts.

Starts Kafka, Postgres and Redis the way the test harness does, runs ingest and grader
(optionally several of each, one consumer group per service) as subprocesses, produces N
conversations to ``rlstream.conversations.raw`` and reads ``rlstream.scored.v1``.

* throughput: N / (last scored record's timestamp - first raw record's timestamp)
* latency: per conversation, scored CreateTime - raw CreateTime (both stamped by the
  producers on this host), p50 / p99. Use ``--rate`` to produce at a fixed rate (e.g. half
  the measured throughput) for the latency figure.

    .venv/bin/python bench/load.py --n 20000
    .venv/bin/python bench/load.py --n 10000 --rate 2500
"""

from __future__ import annotations

import argparse
import asyncio
import time

import orjson
from aiokafka import AIOKafkaProducer

from _services import Stack, conversation, read_topic, start_stack
from rlstream.events import topics


def records(n: int, tasks: int, tag: str) -> list[tuple[bytes, bytes]]:
    out = []
    for i in range(n):
        c = conversation(f"{tag}{i}", f"task{i % tasks}", resolved=(i * 7919) % 3 == 0)
        out.append((c["conversation_id"].encode(), orjson.dumps(c)))
    return out


async def produce_paced(
    bootstrap: str, topic: str, recs: list[tuple[bytes, bytes]], rate: float | None
) -> float:
    prod = AIOKafkaProducer(
        bootstrap_servers=bootstrap, linger_ms=5, acks="all", max_batch_size=1 << 20
    )
    await prod.start()
    t0 = time.perf_counter()
    try:
        futs = []
        for i, (k, v) in enumerate(recs):
            if rate:
                due = t0 + i / rate
                delay = due - time.perf_counter()
                if delay > 0.002:
                    await asyncio.sleep(delay)
            futs.append(await prod.send(topic, value=v, key=k))
        await asyncio.gather(*futs)
    finally:
        await prod.stop()
    return time.perf_counter() - t0


async def wait_scored(st: Stack, n: int, timeout: float) -> list:
    deadline = time.monotonic() + timeout
    from aiokafka import AIOKafkaConsumer

    cons = AIOKafkaConsumer(
        st.topic(topics.SCORED),
        bootstrap_servers=st.bootstrap,
        auto_offset_reset="earliest",
        group_id=None,
        enable_auto_commit=False,
        fetch_max_bytes=64 << 20,
        max_partition_fetch_bytes=16 << 20,
    )
    await cons.start()
    out: dict[str, object] = {}
    try:
        while len(out) < n and time.monotonic() < deadline:
            batch = await cons.getmany(timeout_ms=500, max_records=5000)
            for recs in batch.values():
                for r in recs:
                    cid = orjson.loads(r.value)["transcript"]["conversation_id"]
                    out.setdefault(cid, r)
    finally:
        await cons.stop()
    return list(out.values())


def cpu_s(pid: int) -> float:
    """utime + stime of a process (and its reaped children), in seconds."""
    import os

    with open(f"/proc/{pid}/stat") as f:
        fields = f.read().rsplit(")", 1)[1].split()
    return sum(int(x) for x in fields[11:15]) / os.sysconf("SC_CLK_TCK")


def pct(xs: list[float], q: float) -> float:
    xs = sorted(xs)
    return xs[min(len(xs) - 1, int(q * len(xs)))] if xs else float("nan")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--n", type=int, default=20000)
    ap.add_argument("--tasks", type=int, default=500)
    ap.add_argument("--rate", type=float, default=None, help="conversations/s (default: max)")
    ap.add_argument("--ingest", type=int, default=1, help="ingest processes")
    ap.add_argument("--grader", type=int, default=1, help="grader processes")
    ap.add_argument("--partitions", type=int, default=6)
    ap.add_argument("--batch", type=int, default=1000)
    ap.add_argument("--timeout", type=float, default=600)
    ap.add_argument("--compression", default="none", help="services' producer compression")
    ap.add_argument("--profile", default=None, help="cProfile the services: stats prefix path")
    a = ap.parse_args()

    servers, st = start_stack(
        {
            "RLSTREAM_BATCH_MAX_RECORDS": str(a.batch),
            "RLSTREAM_LOG_LEVEL": "WARNING",
            "RLSTREAM_PRODUCER_COMPRESSION": a.compression,
            **({"RLSTREAM_PROFILE_PATH": a.profile} if a.profile else {}),
        }
    )
    try:
        st.create_topics(partitions=a.partitions)
        st.start(*(["ingest"] * a.ingest + ["grader"] * a.grader))
        # warm up (imports, JIT caches, first group join) outside the measurement
        asyncio.run(
            produce_paced(
                st.bootstrap, st.topic(topics.CONVERSATIONS_RAW), records(200, 50, "warm"), None
            )
        )
        asyncio.run(wait_scored(st, 200, 120))
        recs = records(a.n, a.tasks, "c")
        raw_ts: dict[str, int] = {}
        procs = [p for p in st.procs if p.proc is not None]
        cpu0 = {id(p): cpu_s(p.proc.pid) for p in procs}
        produce_s = asyncio.run(
            produce_paced(st.bootstrap, st.topic(topics.CONVERSATIONS_RAW), recs, a.rate)
        )
        for r in asyncio.run(read_topic(st.bootstrap, st.topic(topics.CONVERSATIONS_RAW), 60)):
            raw_ts[r.key.decode()] = r.timestamp
        scored = asyncio.run(wait_scored(st, a.n + 200, a.timeout))
        cpu = {}
        for p in procs:
            cpu[p.name] = cpu.get(p.name, 0.0) + cpu_s(p.proc.pid) - cpu0[id(p)]
        lat = []
        last = 0
        first = min(v for k, v in raw_ts.items() if not k.startswith("warm"))
        got = 0
        for r in scored:
            cid = orjson.loads(r.value)["transcript"]["conversation_id"]
            if cid.startswith("warm"):
                continue
            got += 1
            lat.append((r.timestamp - raw_ts[cid]) / 1000)
            last = max(last, r.timestamp)
        span = (last - first) / 1000
        print(
            f"load: processes ingest={a.ingest} grader={a.grader} partitions={a.partitions} "
            f"batch={a.batch} rate={'max' if a.rate is None else a.rate} "
            f"compression={a.compression}"
        )
        print(f"load: produced {a.n} in {produce_s:.2f}s ({a.n / produce_s:.0f}/s)")
        print(
            f"load: conversations={a.n} scored={got} e2e_s={span:.2f} "
            f"throughput={got / span if span else 0:.0f}/s "
            f"p50_ms={pct(lat, 0.5) * 1000:.0f} p99_ms={pct(lat, 0.99) * 1000:.0f} "
            f"max_ms={max(lat, default=0) * 1000:.0f}"
        )
        per = {k: v / max(got, 1) * 1e6 for k, v in cpu.items()}
        total = sum(per.values())
        print(
            "load: service CPU per conversation: "
            + " ".join(f"{k}={v:.0f}us" for k, v in per.items())
            + f" total={total:.0f}us -> {1e6 / total:.0f}/s per dedicated core, "
            f"{2e6 / total:.0f}/s on 2 cores (services only; broker/PG not counted)"
        )
    finally:
        st.stop_all()
        servers.stop_all()


if __name__ == "__main__":
    main()
