"""Chaos: kill -9 random services at random moments while conversations flow, restart
them, then account for every input conversation.

Each input conversation must end scored exactly once (one rollout row; the scored topic may
repeat it, at-least-once) or dead-lettered with a reason; no dataset may hold a rollout
another dataset (or the same file) already holds. Poison records (invalid JSON) are mixed
in and must end in the DLQ. The last line is machine-readable:

    chaos: conversations=N scored=S dlq=D lost=L duplicated=X

    .venv/bin/python bench/chaos.py --n 3000 --seconds 60 --seed 7
"""

from __future__ import annotations

import argparse
import asyncio
import json
import random
import signal
import threading
import time
from collections import Counter
from pathlib import Path

import asyncpg
import orjson

from _services import Stack, conversation, produce, read_topic, release_env, start_stack
from rlstream.events import topics


async def q(dsn: str, sql: str) -> list[asyncpg.Record]:
    conn = await asyncpg.connect(dsn)
    try:
        return list(await conn.fetch(sql))
    finally:
        await conn.close()


def dlq_keys(st: Stack) -> dict[str, str]:
    out: dict[str, str] = {}
    for t in (topics.CONVERSATIONS_RAW, topics.TRANSCRIPTS, topics.SCORED):
        for r in asyncio.run(read_topic(st.bootstrap, st.topic(topics.dlq(t)), 10)):
            entry = json.loads(r.value)
            assert entry["error_code"] and entry["error_message"], "DLQ record without a reason"
            out.setdefault((r.key or b"").decode(), entry["error_code"])
    return out


def dataset_duplicates(st: Stack, data_dir: Path) -> tuple[int, int]:
    """(duplicates, manifests checked): per file and across datasets, from manifest.json."""
    dup = 0
    manifests = 0
    owner: dict[str, str] = {}
    for mf in sorted(data_dir.glob("datasets/*/*/manifest.json")):
        m = json.loads(mf.read_text())
        manifests += 1
        per_file: dict[str, Counter[str]] = {}
        ids: set[str] = set()
        for entry in m.get("lineage", []):
            c = per_file.setdefault(entry["file"], Counter())
            c.update(entry["rollout_ids"])
            ids |= set(entry["rollout_ids"])
        dup += sum(n - 1 for c in per_file.values() for n in c.values() if n > 1)
        for rid in ids:
            if rid in owner and owner[rid] != m["dataset_id"]:
                dup += 1
            owner[rid] = m["dataset_id"]
    # Postgres view: a rollout's dataset is one column, so compare it with the manifests
    rows = asyncio.run(
        q(st.dsn, "SELECT rollout_id, released_in FROM rollouts WHERE released_in IS NOT NULL")
    )
    dup += sum(1 for r in rows if owner.get(r[0], r[1]) != r[1])
    return dup, manifests


def turn_deltas(c: dict) -> list[tuple[bytes, bytes]]:
    from rlstream.events import RawTurnDelta

    body = dict(c)
    msgs = body.pop("messages")
    cid = body["conversation_id"]
    return [
        (
            cid.encode(),
            RawTurnDelta(
                conversation_id=cid,
                turn=t,
                messages=(m,),
                end=t == len(msgs) - 1,
                metadata=body if t == 0 else {},
            ).dump_json(),
        )
        for t, m in enumerate(msgs)
    ]


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--n", type=int, default=3000, help="good conversations")
    ap.add_argument("--poison", type=float, default=0.01, help="fraction of invalid records")
    ap.add_argument("--deltas", type=float, default=0.05, help="fraction sent as turn deltas")
    ap.add_argument("--seconds", type=float, default=60.0, help="production + chaos duration")
    ap.add_argument("--settle", type=float, default=240.0, help="max wait for the backlog")
    ap.add_argument("--seed", type=int, default=7)
    a = ap.parse_args()
    rng = random.Random(a.seed)

    servers, st = start_stack(
        release_env(300, 20, 1)
        | {"RLSTREAM_LOG_LEVEL": "WARNING", "RLSTREAM_BATCH_MAX_RECORDS": "200"}
    )
    kills: Counter[str] = Counter()
    try:
        st.create_topics()
        procs = st.start("ingest", "grader", "curator")
        good = [
            conversation(f"c{i}", f"task{i % 60}", resolved=rng.random() < 0.5) for i in range(a.n)
        ]
        recs = []
        streamed: list[list[tuple[bytes, bytes]]] = []
        for c in good:
            if rng.random() < a.deltas:  # this one arrives as turn deltas
                streamed.append(turn_deltas(c))
            else:
                recs.append((c["conversation_id"].encode(), orjson.dumps(c)))
        bad = [
            (f"bad{i}".encode(), b"{not json " + str(i).encode())
            for i in range(int(a.n * a.poison))
        ]
        recs += bad
        rng.shuffle(recs)
        # a conversation's deltas keep their order (same key, same partition), interleaved
        for deltas in streamed:
            at = sorted(rng.sample(range(len(recs) + 1), len(deltas)))
            for pos, rec in reversed(list(zip(at, deltas, strict=True))):
                recs.insert(pos, rec)
        expected = {k.decode() for k, _ in recs}
        print(f"chaos: {len(streamed)} conversations as turn deltas, {len(bad)} poison records")

        stop = threading.Event()

        def chaos() -> None:
            while not stop.is_set():
                time.sleep(rng.uniform(0.5, 4.0))
                if stop.is_set():
                    return
                p = rng.choice(procs)
                p.kill(signal.SIGKILL)
                kills[p.name] += 1
                time.sleep(rng.uniform(0.0, 1.0))
                p.start()
                try:
                    p.wait_ready(120)
                except Exception as exc:  # keep going; the settle phase will tell
                    print(f"chaos: {p.name} did not come back: {exc}")

        th = threading.Thread(target=chaos, daemon=True)
        th.start()
        chunks = 20
        size = (len(recs) + chunks - 1) // chunks
        for i in range(chunks):
            asyncio.run(
                produce(
                    st.bootstrap,
                    st.topic(topics.CONVERSATIONS_RAW),
                    recs[i * size : (i + 1) * size],
                )
            )
            time.sleep(a.seconds / chunks)
        stop.set()
        th.join()
        for p in procs:
            if not p.alive():
                p.start()
                p.wait_ready(120)

        deadline = time.monotonic() + a.settle
        while True:
            scored_ids = {
                r[0] for r in asyncio.run(q(st.dsn, "SELECT conversation_id FROM rollouts"))
            }
            dlq = dlq_keys(st)
            done = (scored_ids | set(dlq)) & expected
            if len(done) >= len(expected) or time.monotonic() > deadline:
                break
            time.sleep(2)
        time.sleep(3)  # let a last release finish
        scored_ids = {r[0] for r in asyncio.run(q(st.dsn, "SELECT conversation_id FROM rollouts"))}
        dlq = dlq_keys(st)
        scored = len(scored_ids & expected)
        dead = len((set(dlq) - scored_ids) & expected)
        lost = len(expected) - scored - dead
        dup, manifests = dataset_duplicates(st, Path(st.workdir) / "data")
        datasets = asyncio.run(q(st.dsn, "SELECT count(*) FROM datasets"))[0][0]
        print(
            f"chaos: kills={dict(kills)} datasets={datasets} manifests_checked={manifests} dlq_reasons={dict(Counter(dlq.values()))}"
        )
        print(
            f"chaos: conversations={len(expected)} scored={scored} dlq={dead} lost={lost} duplicated={dup}"
        )
    finally:
        st.stop_all()
        servers.stop_all()


if __name__ == "__main__":
    main()
