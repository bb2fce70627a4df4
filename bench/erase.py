"""Erasing one user among 100,000 stored conversations (issue 20 item 1).

Real Postgres and Redis (the test harness's servers). Stores ``--n`` conversations of many
customers (graded rollouts, group counters, Redis seen keys and counters), the user's few
among them; releases a curated dataset that holds the user's rollouts, with a run and a
champion model trained on it; then erases the user (``rlstream.erasure.Eraser``, what
``rlstream erase --user-key`` runs) and prints the seconds and everything it touched.

Size independence: the same erasure is timed with ``--small`` conversations stored and
again after the table has grown to ``--n`` (two users, same shape), and the plans of the
lookups are printed (index scans, no sequential scan of a large table).

    .venv/bin/python bench/erase.py                 # 10,000 then 100,000
    .venv/bin/python bench/erase.py --n 20000 --small 2000
"""

from __future__ import annotations

import argparse
import asyncio
import sys
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

from _services import start_servers
from rlstream.curation import CurateOptions
from rlstream.erasure import Eraser, ErasureSettings, Selector
from rlstream.pii import keys
from rlstream.rewards.base import RewardResult
from rlstream.rollout import ScoredRollout
from rlstream.services.curator.seal import seal_dataset
from rlstream.storage import (
    DatasetRecord,
    ErasureOps,
    LineageEdge,
    ModelRecord,
    PromotionRecord,
    RedisState,
    RunRecord,
    Store,
    rollout_group,
    upgrade,
)
from rlstream.transcript import Message, SourceRef, Transcript

AGENT = "support-bot"
SPEC = "outcome@1"
KEY = b"bench-erase-pii-key-0123456789abcdef"
BATCH = 2000
WORDS = [
    "order",
    "parcel",
    "refund",
    "invoice",
    "courier",
    "delay",
    "tracking",
    "label",
    "voucher",
    "billing",
]


def _transcript(cid: str, customer: str, task: int, i: int) -> Transcript:
    reply = " ".join(WORDS[(i * 7 + k) % len(WORDS)] for k in range(10))
    return Transcript(
        conversation_id=cid,
        messages=(
            Message(role="user", content=f"Task {task}: where is my order <EMAIL_1>?"),
            Message(role="assistant", content=f"{reply} ({i})"),
        ),
        task_key=f"task_id:{task}",
        agent=AGENT,
        metadata={"customer_id": keys.stand_in(customer), "task_id": str(task)},
        redacted=True,
        source=SourceRef(kind="kafka", topic="raw", partition=i % 12, offset=i),
    )


def _rollout(t: Transcript, passed: bool) -> ScoredRollout:
    score = 1.0 if passed else 0.0
    result = RewardResult(
        reward="outcome", version="1", score=score, passed=passed, threshold=0.5,
        components={"resolved": score}, features={"length": 2.0},
    )  # fmt: skip
    return ScoredRollout(
        rollout_id=ScoredRollout.make_id(t.conversation_id, SPEC), transcript=t,
        results=(result,), score=score, passed=passed, reward_spec=SPEC,
    )  # fmt: skip


async def _store_range(store: Store, state: RedisState, start: int, stop: int) -> None:
    """Conversations ``start..stop`` of 5,000 customers over ``stop // 5`` tasks."""
    for lo in range(start, stop, BATCH):
        rs = [
            _rollout(_transcript(f"conv-{i}", f"C-{i % 5000}", i // 5, i), i % 2 == 0)
            for i in range(lo, min(stop, lo + BATCH))
        ]
        await store.save_rollouts(rs)
        await state.bump_groups(rs)
        await state.mark_seen([state.idem_key("transcript", r.conversation_id) for r in rs])


async def _user(store: Store, state: RedisState, data: Path, name: str, base: int) -> str:
    """A user with 5 conversations in 5 tasks shared with others, released and trained on."""
    rs = []
    for j in range(5):
        task = base + j
        rs.append(
            _rollout(_transcript(f"{name}-conv-{j}", name, task, 10_000_000 + base + j), j % 2 == 0)
        )
        rs += [
            _rollout(_transcript(f"{name}-peer-{j}-{k}", f"P-{base}-{k}", task, base * 10 + k), k % 2 == 1)
            for k in range(4)
        ]  # fmt: skip
    await store.save_rollouts(rs)
    await state.bump_groups(rs)
    await state.mark_seen([state.idem_key("transcript", r.conversation_id) for r in rs])
    sealed = seal_dataset(rs, data / "datasets", AGENT, CurateOptions(heldout_share=0.01), None)
    assert sealed is not None
    kept = sorted(sealed.rollout_ids)
    by_id = {r.rollout_id: r for r in rs}
    await store.release_dataset(
        DatasetRecord(dataset_id=sealed.dataset_id, agent=AGENT, reward_spec=SPEC,
                      manifest={"release": {"manifest": sealed.manifest}},
                      path=str(sealed.path), n_rollouts=len(kept)),
        kept,
    )  # fmt: skip
    edges = []
    for rid in kept:
        label = rollout_group(by_id[rid]).label()
        edges += [
            LineageEdge(from_kind="dataset", from_id=sealed.dataset_id, to_kind="group", to_id=label),
            LineageEdge(from_kind="group", from_id=label, to_kind="rollout", to_id=rid),
        ]  # fmt: skip
    await store.add_lineage(edges)
    run = f"run-{name}"
    await store.create_run(
        RunRecord(run_id=run, agent=AGENT, backend="builtin", method="sft", status="succeeded",
                  dataset_id=sealed.dataset_id, artifact_path=str(data / "runs" / run))
    )  # fmt: skip
    (data / "runs" / run).mkdir(parents=True)
    (data / "runs" / run / "rows.jsonl").write_text("{}\n")
    model = f"model-{name}".ljust(64, "0")
    await store.register_model(ModelRecord(model_id=model, agent=AGENT, run_id=run))
    await store.promote(PromotionRecord(promotion_id=f"p-{name}", agent=AGENT, model_id=model,
                                        alias="champion"))  # fmt: skip
    return sealed.dataset_id


async def _explain(store: Store, customer: str) -> list[str]:
    doc = {"customer_id": keys.stand_in(customer)}
    plans = {}
    for label, sql, args in (
        ("match", "SELECT conversation_id FROM transcripts WHERE (body -> 'metadata') @> $1::jsonb", [doc]),
        ("rollouts", "SELECT rollout_id FROM rollouts WHERE conversation_id = ANY($1::text[])", [["x"]]),
        ("heldout check", "SELECT 1 FROM rollouts WHERE agent = $1 AND task_key = $2", [AGENT, "k"]),
        ("tombstone guard", "SELECT 1 FROM erased_ids WHERE digest = erased_digest('conversation', $1)", ["x"]),
    ):  # fmt: skip
        rows = await store.pool.fetch(f"EXPLAIN {sql}", *args)
        plans[label] = " / ".join(str(r[0]).strip() for r in rows)
    return [f"  {k}: {v}" for k, v in plans.items()]


async def _erase(store: Store, state: RedisState, data: Path, customer: str) -> Any:
    settings = ErasureSettings(data_dir=data, subject_fields=("customer_id",))
    eraser = Eraser(
        ErasureOps(store.pool), settings, dataset_roots=[data / "datasets"],
        run_roots=[data / "runs"], redis=state,
    )  # fmt: skip
    t0 = time.perf_counter()
    report = await eraser.run(Selector(kind="user_key", value=customer))
    return time.perf_counter() - t0, report


_UNDO_0006 = """
DROP TRIGGER transcripts_refuse_erased ON transcripts;
DROP TRIGGER rollouts_refuse_erased ON rollouts;
DROP INDEX transcripts_metadata;
DROP INDEX turn_buffers_metadata;
DROP INDEX rollouts_agent_key;
"""


async def _write_cost(srv: dict[str, Any], n: int) -> list[str]:
    """Storing ``n`` graded conversations with migration 0006's indexes and triggers, and
    without them (the cost erasure adds to every write), alternated, best of two."""
    best: dict[str, float] = {}
    for attempt in range(2):
        for label in ("with 0006", "without"):
            dsn = srv["postgres"].create_database()
            await upgrade(dsn)
            store = await Store.connect(dsn, max_size=2)
            if label == "without":
                await store.pool.execute(_UNDO_0006)
            rs = [
                _rollout(_transcript(f"w{attempt}-{i}", f"C-{i % 5000}", i // 5, i), i % 2 == 0)
                for i in range(n)
            ]
            t0 = time.perf_counter()
            for lo in range(0, n, BATCH):
                await store.save_rollouts(rs[lo : lo + BATCH])
            rate = n / (time.perf_counter() - t0)
            best[label] = max(best.get(label, 0.0), rate)
            await store.close()
    return [f"  {k}: {v:,.0f} conversations/s stored (save_rollouts)" for k, v in best.items()]


async def main(n: int, small: int, write_cost: int) -> None:
    keys.configure(keys.Pseudonymiser(KEY))
    servers, srv, rundir = start_servers(("postgres", "redis"))
    try:
        dsn = srv["postgres"].create_database()
        await upgrade(dsn)
        store = await Store.connect(dsn, max_size=4)
        state = RedisState.from_url(srv["redis"].url, namespace="bench-erase")
        data = rundir / "data"
        results = []
        stored = 0
        for size, user, base in ((small, "U-small", 90_000_000), (n, "U-large", 95_000_000)):
            t0 = time.perf_counter()
            await _store_range(store, state, stored, size)
            stored = size
            await _user(store, state, data, user, base)
            total = int(await store.pool.fetchval("SELECT count(*) FROM transcripts"))
            await store.pool.execute("ANALYZE")
            print(f"stored {total:,} conversations in {time.perf_counter() - t0:.1f} s", flush=True)
            seconds, report = await _erase(store, state, data, user)
            results.append((total, seconds, report))
            print(f"erased user {user} among {total:,} in {seconds:.2f} s", flush=True)
            for line in report.lines():
                print("  " + line)
        print("plans at", f"{stored:,}", "conversations:")
        for line in await _explain(store, "U-large"):
            print(line)
        if write_cost:
            print(f"write cost, {write_cost:,} graded conversations into an empty database:")
            for line in await _write_cost(srv, write_cost):
                print(line)
        print("summary:")
        for total, seconds, report in results:
            c = report.counts
            print(
                f"  {total:>9,} stored: {seconds:6.2f} s; {c.get('transcripts')} conversations,"
                f" {c.get('rollouts')} rollouts ({c.get('released_rollouts')} released),"
                f" {c.get('lineage_edges')} edges, {c.get('dataset_rows', 0)} dataset rows,"
                f" {c.get('redis_keys', 0)} redis keys, {c.get('run_files', 0)} run files"
            )
        await state.close()
        await store.close()
    finally:
        servers.stop_all()


if __name__ == "__main__":
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--n", type=int, default=100_000, help="conversations stored at the end")
    ap.add_argument("--small", type=int, default=10_000, help="conversations at the first erasure")
    ap.add_argument(
        "--write-cost", type=int, default=20_000,
        help="also time storing this many with and without migration 0006 (0: skip)",
    )  # fmt: skip
    args = ap.parse_args()
    asyncio.run(main(args.n, args.small, args.write_cost))
