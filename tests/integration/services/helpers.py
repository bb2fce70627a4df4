"""Assertions on the pipeline's durable state (Postgres) and its topics."""

from __future__ import annotations

import asyncio
import json
import time
from pathlib import Path
from typing import Any

import asyncpg

from rlstream.events import TrainingRunEvent, topics


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


def run_output(root: Path, run_id: str) -> Path:
    """A finished run's output folder with a (fake) adapter the evaluator accepts."""
    out = root / run_id
    (out / "adapter").mkdir(parents=True)
    (out / "adapter" / "adapter_config.json").write_text(json.dumps({"r": 8}))
    (out / "adapter" / "adapter_model.safetensors").write_bytes(run_id.encode() * 100)
    return out


def succeeded_run(
    run_id: str, agent: str, dataset_id: str, spec_id: str, out: Path
) -> tuple[bytes, bytes]:
    """(key, value) of a ``succeeded`` TrainingRunEvent for the evaluator to pick up."""
    ev = TrainingRunEvent(
        run_id=run_id, dataset_id=dataset_id, agent=agent, reward_spec=spec_id,
        state="succeeded", backend="builtin", method="sft", base_model="/models/base",
        artifact_dir=str(out), launcher="local",
    )  # fmt: skip
    return run_id.encode(), ev.dump_json()


def library_evaluator(st: Any, tmp: Path, **env: str) -> tuple[Any, Path, Path]:
    """A started evaluator running the library's own evaluation with a prose sampler
    (``evaluator_stub:evaluate_library``), greedy, one sample: (process, stub dir, reports)."""
    stub, reports = tmp / "stub", tmp / "reports"
    ev = st.service(
        "evaluator",
        RLSTREAM_EVALUATE_FUNCTION="evaluator_stub:evaluate_library",
        RLSTREAM_REPORTS_DIR=str(reports),
        RLSTREAM_EVAL_K="1",
        RLSTREAM_EVAL_GREEDY="true",
        PYTHONPATH=str(Path(__file__).resolve().parent),
        STUB_DIR=str(stub),
        **env,
    )
    ev.start()
    ev.wait_ready()
    return ev, stub, reports


__all__ = [
    "count",
    "dlq_codes",
    "library_evaluator",
    "no_rollout_in_two_datasets",
    "pg",
    "run_output",
    "scored_ids",
    "succeeded_run",
    "topics",
    "wait_until",
]
