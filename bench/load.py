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
    .venv/bin/python bench/load.py --n 3000 --compare-security
    .venv/bin/python bench/load.py --n 5000 --compare-tracing

``--security sasl_ssl`` (or ``mtls``) runs every Kafka client (the services and the bench's
own producer and consumer) through the harness's secured broker (SASL_SSL with
SCRAM-SHA-512, or TLS with client certificates); ``--compare-security`` measures PLAINTEXT
and SASL_SSL on that same broker in one run, one after the other, and prints the ratio.
"""

from __future__ import annotations

import argparse
import asyncio
import time
from pathlib import Path
from typing import Any

import orjson
from aiokafka import AIOKafkaProducer

from _services import Stack, conversation, read_topic, start_servers
from rlstream.delivery.kafka_security import client_kwargs
from rlstream.events import topics
from rlstream.settings import Settings


def records(n: int, tasks: int, tag: str) -> list[tuple[bytes, bytes]]:
    out = []
    for i in range(n):
        c = conversation(f"{tag}{i}", f"task{i % tasks}", resolved=(i * 7919) % 3 == 0)
        out.append((c["conversation_id"].encode(), orjson.dumps(c)))
    return out


def security_kwargs(env: dict[str, str]) -> dict[str, Any]:
    """The bench's own clients connect as the services do (same RLSTREAM_KAFKA_* values)."""
    fields = {k.removeprefix("RLSTREAM_").lower(): v for k, v in env.items()}
    return client_kwargs(Settings(**{k: v for k, v in fields.items() if k.startswith("kafka_")}))


async def produce_paced(
    bootstrap: str,
    topic: str,
    recs: list[tuple[bytes, bytes]],
    rate: float | None,
    security: dict[str, Any],
) -> float:
    prod = AIOKafkaProducer(
        bootstrap_servers=bootstrap,
        linger_ms=5,
        acks="all",
        max_batch_size=1 << 20,
        **security,
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


async def wait_scored(
    bootstrap: str, st: Stack, n: int, timeout: float, security: dict[str, Any]
) -> list:
    deadline = time.monotonic() + timeout
    from aiokafka import AIOKafkaConsumer

    cons = AIOKafkaConsumer(
        st.topic(topics.SCORED),
        bootstrap_servers=bootstrap,
        **security,
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


def measure(
    a: argparse.Namespace,
    srv: dict[str, Any],
    workdir: Path,
    security: str,
    extra_env: dict[str, str] | None = None,
    tag: str | None = None,
) -> dict:
    """One run of the pipeline with every Kafka client on ``security``; prints its lines."""
    kafka = srv["kafka_secure"] if "kafka_secure" in srv else srv["kafka"]
    kenv = kafka.env(security) if hasattr(kafka, "env") else {}
    env = {
        "RLSTREAM_BATCH_MAX_RECORDS": str(a.batch),
        "RLSTREAM_LOG_LEVEL": "WARNING",
        "RLSTREAM_PRODUCER_COMPRESSION": a.compression,
        **({"RLSTREAM_PROFILE_PATH": a.profile} if a.profile else {}),
        **kenv,
        **(extra_env or {}),
    }
    # the Stack creates topics and reads raw timestamps over PLAINTEXT (not measured)
    st = Stack(
        kafka.bootstrap, srv["postgres"].create_database(), srv["redis"].url, workdir, env=env
    )
    bootstrap, sec = env.get("RLSTREAM_KAFKA_BOOTSTRAP", kafka.bootstrap), security_kwargs(env)
    try:
        st.create_topics(partitions=a.partitions)
        st.start(*(["ingest"] * a.ingest + ["grader"] * a.grader))
        raw = st.topic(topics.CONVERSATIONS_RAW)
        # warm up (imports, JIT caches, first group join) outside the measurement
        asyncio.run(produce_paced(bootstrap, raw, records(200, 50, "warm"), None, sec))
        asyncio.run(wait_scored(bootstrap, st, 200, 120, sec))
        recs = records(a.n, a.tasks, "c")
        raw_ts: dict[str, int] = {}
        procs = [p for p in st.procs if p.proc is not None]
        cpu0 = {id(p): cpu_s(p.proc.pid) for p in procs}
        produce_s = asyncio.run(produce_paced(bootstrap, raw, recs, a.rate, sec))
        for r in asyncio.run(read_topic(st.bootstrap, raw, 60)):
            raw_ts[r.key.decode()] = r.timestamp
        scored = asyncio.run(wait_scored(bootstrap, st, a.n + 200, a.timeout, sec))
        cpu: dict[str, float] = {}
        for p in procs:
            cpu[p.name] = cpu.get(p.name, 0.0) + cpu_s(p.proc.pid) - cpu0[id(p)]
    finally:
        st.stop_all()
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
    tag = f"load[{tag or security}]"
    print(
        f"{tag}: processes ingest={a.ingest} grader={a.grader} partitions={a.partitions} "
        f"batch={a.batch} rate={'max' if a.rate is None else a.rate} "
        f"compression={a.compression} kafka={security}"
    )
    print(f"{tag}: produced {a.n} in {produce_s:.2f}s ({a.n / produce_s:.0f}/s)")
    throughput = got / span if span else 0.0
    print(
        f"{tag}: conversations={a.n} scored={got} e2e_s={span:.2f} "
        f"throughput={throughput:.0f}/s "
        f"p50_ms={pct(lat, 0.5) * 1000:.0f} p99_ms={pct(lat, 0.99) * 1000:.0f} "
        f"max_ms={max(lat, default=0) * 1000:.0f}"
    )
    per = {k: v / max(got, 1) * 1e6 for k, v in cpu.items()}
    total = sum(per.values())
    print(
        f"{tag}: service CPU per conversation: "
        + " ".join(f"{k}={v:.0f}us" for k, v in per.items())
        + f" total={total:.0f}us -> {1e6 / total:.0f}/s per dedicated core, "
        f"{2e6 / total:.0f}/s on 2 cores (services only; broker/PG not counted)"
    )
    return {"throughput": throughput, "cpu_us": total, "p50_ms": pct(lat, 0.5) * 1000}


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
    ap.add_argument(
        "--security",
        choices=("plaintext", "sasl_ssl", "mtls"),
        default="plaintext",
        help="how every Kafka client connects (sasl_ssl: SCRAM-SHA-512 over TLS)",
    )
    ap.add_argument(
        "--compare-security",
        action="store_true",
        help="run plaintext, then sasl_ssl, on the same secured broker; print the ratio",
    )
    ap.add_argument(
        "--compare-tracing",
        action="store_true",
        help="run with tracing off, then on (OTLP/HTTP to a receiver in this process; every "
        "span kept, then 10%% of traces sampled); print the services' CPU per conversation",
    )
    a = ap.parse_args()
    if a.compare_tracing:
        compare_tracing(a)
        return

    modes = ["plaintext", "sasl_ssl"] if a.compare_security else [a.security]
    secure = any(m != "plaintext" for m in modes)
    servers, srv, rundir = start_servers(
        ("kafka_secure" if secure else "kafka", "postgres", "redis")
    )
    try:
        res = {m: measure(a, srv, rundir / f"stack-{m}", m) for m in modes}
    finally:
        servers.stop_all()
    if a.compare_security:
        base, sec = res["plaintext"], res["sasl_ssl"]
        print(
            f"load: sasl_ssl/plaintext throughput={sec['throughput'] / base['throughput']:.2f}x "
            f"({sec['throughput']:.0f}/s vs {base['throughput']:.0f}/s) "
            f"service_cpu={sec['cpu_us'] / base['cpu_us']:.2f}x "
            f"p50={sec['p50_ms']:.0f}ms vs {base['p50_ms']:.0f}ms"
        )


def compare_tracing(a: argparse.Namespace) -> None:
    """Tracing off, then on, on the same servers: what the spans cost the services."""
    from rlstream_testkit.otlp import OtlpReceiver

    servers, srv, rundir = start_servers(("kafka", "postgres", "redis"))
    try:
        off = measure(a, srv, rundir / "stack-off", "plaintext", tag="tracing=off")
        runs: dict[str, tuple[dict, int]] = {}
        sampled = {
            "OTEL_TRACES_SAMPLER": "parentbased_traceidratio",
            "OTEL_TRACES_SAMPLER_ARG": "0.1",
        }
        for mode, extra in (("otlp", {}), ("otlp-10%", sampled)):
            with OtlpReceiver() as rx:
                env = {"RLSTREAM_TRACING": "otlp", "RLSTREAM_OTLP_ENDPOINT": rx.endpoint, **extra}
                res = measure(a, srv, rundir / f"stack-{mode}", "plaintext", env, f"tracing={mode}")
                runs[mode] = (res, len(rx.wait_for(lambda s: False, timeout=3)))
    finally:
        servers.stop_all()
    for mode, (on, spans) in runs.items():
        print(
            f"load: tracing {mode}/off service_cpu={on['cpu_us'] / off['cpu_us']:.2f}x "
            f"({on['cpu_us']:.0f}us vs {off['cpu_us']:.0f}us per conversation) "
            f"throughput={on['throughput'] / off['throughput']:.2f}x "
            f"p50={on['p50_ms']:.0f}ms vs {off['p50_ms']:.0f}ms spans_received={spans}"
        )


if __name__ == "__main__":
    main()
