"""Soak: a steady rate of conversations for M minutes; is every service's memory flat?

Starts Kafka, Postgres and Redis the way the test harness does, runs ingest, grader and
curator as subprocesses, produces conversations (unique ids, rotating task keys) at a fixed
rate, and samples each service process's RSS (``/proc/<pid>/status`` VmRSS) every
``--sample-s`` seconds. The slope is a least-squares fit of RSS against time over the
samples after the warm-up (``--warmup-s``: imports, first batches, pools filling). The last
line is machine-readable:

    soak: minutes=M rate=R rss_slope_mb_per_min=<max over services> verdict=flat|grows

    .venv/bin/python bench/soak.py --minutes 10 --rate 500
"""

from __future__ import annotations

import argparse
import asyncio
import time

import asyncpg
import orjson
from aiokafka import AIOKafkaProducer

from _services import Stack, conversation, release_env, start_stack
from rlstream.events import topics


def rss_mb(pid: int) -> float:
    with open(f"/proc/{pid}/status") as f:
        for line in f:
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) / 1024
    return float("nan")


def slope_per_min(samples: list[tuple[float, float]]) -> float:
    """Least-squares slope of (seconds, MB) samples, in MB per minute."""
    if len(samples) < 2:
        return 0.0
    n = len(samples)
    mt = sum(t for t, _ in samples) / n
    mr = sum(r for _, r in samples) / n
    den = sum((t - mt) ** 2 for t, _ in samples)
    return 0.0 if den == 0 else sum((t - mt) * (r - mr) for t, r in samples) / den * 60


async def run(st: Stack, a: argparse.Namespace) -> tuple[int, dict[str, list[tuple[float, float]]]]:
    procs = [p for p in st.procs if p.proc is not None]
    names = {}
    for p in procs:
        idx = sum(q.name == p.name for q in procs[: procs.index(p)])
        names[id(p)] = p.name if idx == 0 else f"{p.name}{idx}"
    samples: dict[str, list[tuple[float, float]]] = {names[id(p)]: [] for p in procs}
    prod = AIOKafkaProducer(
        bootstrap_servers=st.bootstrap, linger_ms=5, acks="all", max_batch_size=1 << 20
    )
    await prod.start()
    topic = st.topic(topics.CONVERSATIONS_RAW)
    t0 = time.monotonic()
    end = t0 + a.minutes * 60
    next_sample = t0
    sent = 0
    pending: list[asyncio.Future[object]] = []
    try:
        while True:
            now = time.monotonic()
            if now >= next_sample:
                for p in procs:
                    assert p.proc is not None
                    if not p.alive():
                        raise RuntimeError(f"{p.name} died:\n{p.tail()}")
                    samples[names[id(p)]].append((now - t0, rss_mb(p.proc.pid)))
                line = " ".join(f"{k}={v[-1][1]:.1f}" for k, v in samples.items())
                print(f"soak: t={now - t0:.0f}s sent={sent} rss_mb {line}", flush=True)
                next_sample += a.sample_s
            if now >= end:
                break
            due = int((now - t0) * a.rate)
            while sent < due:
                c = conversation(f"s{sent}", f"task{sent % a.tasks}", resolved=sent % 3 == 0)
                pending.append(
                    await prod.send(topic, value=orjson.dumps(c), key=c["conversation_id"].encode())
                )
                sent += 1
            if len(pending) > 5000:
                await asyncio.gather(*pending)
                pending.clear()
            await asyncio.sleep(0.05)
        await asyncio.gather(*pending)
    finally:
        await prod.stop()
    return sent, samples


async def scored_count(dsn: str) -> int:
    conn = await asyncpg.connect(dsn)
    try:
        return int(await conn.fetchval("SELECT count(*) FROM rollouts"))
    finally:
        await conn.close()


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--minutes", type=float, default=10.0)
    ap.add_argument("--rate", type=float, default=500.0, help="conversations/s")
    ap.add_argument("--tasks", type=int, default=500)
    ap.add_argument("--sample-s", type=float, default=10.0)
    ap.add_argument("--warmup-s", type=float, default=60.0, help="samples before this: no fit")
    ap.add_argument("--flat", type=float, default=1.0, help="MB/min at or under which: flat")
    ap.add_argument("--settle", type=float, default=120.0, help="max wait for the backlog")
    a = ap.parse_args()

    servers, st = start_stack({"RLSTREAM_LOG_LEVEL": "WARNING"} | release_env(2000, 50, 5))
    try:
        st.create_topics(partitions=6)
        st.start("ingest", "grader", "curator")
        sent, samples = asyncio.run(run(st, a))
        deadline = time.monotonic() + a.settle
        scored = asyncio.run(scored_count(st.dsn))
        while scored < sent and time.monotonic() < deadline:
            time.sleep(2)
            scored = asyncio.run(scored_count(st.dsn))
        print(f"soak: sent={sent} scored={scored} (backlog drained: {scored >= sent})")
        worst = 0.0
        for name, xs in samples.items():
            fit = [s for s in xs if s[0] >= a.warmup_s] or xs
            sl = slope_per_min(fit)
            worst = max(worst, sl)
            print(
                f"soak: {name} rss_start_mb={xs[0][1]:.1f} rss_after_warmup_mb={fit[0][1]:.1f} "
                f"rss_end_mb={xs[-1][1]:.1f} rss_max_mb={max(r for _, r in xs):.1f} "
                f"slope_mb_per_min={sl:.3f} samples={len(xs)}"
            )
        verdict = "flat" if worst <= a.flat else "grows"
        print(
            f"soak: minutes={a.minutes:g} rate={a.rate:g} "
            f"rss_slope_mb_per_min={worst:.3f} verdict={verdict}"
        )
    finally:
        st.stop_all()
        servers.stop_all()


if __name__ == "__main__":
    main()
