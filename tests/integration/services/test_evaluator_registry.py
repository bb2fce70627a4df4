"""The evaluator's registry writes on real Kafka + Postgres (issue 17 item 4): only a
``promote`` moves ``challenger``; a champion that moved during the evaluation is not
overwritten (the refusal is recorded and published); a kill -9 between the evaluation's
registry steps leaves a consistent registry. The evaluation is evaluator_stub's."""

from __future__ import annotations

import asyncio
import json
import os
from collections.abc import Callable
from pathlib import Path
from typing import Any

import asyncpg
import pytest
from evaluator_stub import calls
from helpers import count, pg, wait_until

from rlstream.events import DeploymentEvent, EvaluationEvent, TrainingRunEvent, topics
from rlstream.registry import model_id_for
from rlstream_testkit.stack import Stack, produce, read_topic, wait_for_count

pytestmark = [pytest.mark.kafka, pytest.mark.postgres, pytest.mark.redis]

HERE = Path(__file__).resolve().parent


def _run(root: Path, run_id: str) -> tuple[bytes, bytes]:
    out = root / run_id
    (out / "adapter").mkdir(parents=True)
    (out / "adapter" / "adapter_config.json").write_text(json.dumps({"r": 8}))
    (out / "adapter" / "adapter_model.safetensors").write_bytes(run_id.encode() * 100)
    ev = TrainingRunEvent(
        run_id=run_id, dataset_id="d" * 64, agent="support", reward_spec="tool_calling",
        state="succeeded", backend="builtin", method="sft", base_model="/models/base",
        artifact_dir=str(out), launcher="local",
    )  # fmt: skip
    return run_id.encode(), ev.dump_json()


def _evaluator(st: Stack, stub: Path, function: str = "evaluate", **env: str) -> Any:
    # keep the caller's PYTHONPATH (a pre-change tree under test) after the stub's folder
    path = os.pathsep.join(p for p in (str(HERE), os.environ.get("PYTHONPATH", "")) if p)
    return st.service(
        "evaluator",
        RLSTREAM_EVALUATE_FUNCTION=f"evaluator_stub:{function}",
        PYTHONPATH=path,
        STUB_DIR=str(stub),
        **env,
    )


def _heldout(st: Stack, root: Path) -> None:
    """The runs' dataset, recorded with a held-out file, so the evaluation runs (the stub
    reads none of it)."""
    d = root / "dataset"
    d.mkdir()
    (d / "heldout.jsonl").write_text(
        "".join(json.dumps({"task_key": f"k{i}", "prompt": "?"}) + "\n" for i in range(3))
    )

    async def go() -> None:
        conn = await asyncpg.connect(st.dsn)
        try:
            await conn.execute(
                "INSERT INTO datasets (dataset_id, agent, reward_spec, manifest, path)"
                " VALUES ($1, 'support', 'tool_calling', '{}', $2)",
                "d" * 64,
                str(d),
            )
        finally:
            await conn.close()

    asyncio.run(go())


def _send(st: Stack, *records: tuple[bytes, bytes]) -> None:
    asyncio.run(produce(st.bootstrap, st.topic(topics.TRAINING), list(records)))


def _evaluations(st: Stack, n: int) -> list[EvaluationEvent]:
    asyncio.run(wait_for_count(st.bootstrap, st.topic(topics.EVALUATIONS), n, timeout=90))
    rows = asyncio.run(read_topic(st.bootstrap, st.topic(topics.EVALUATIONS)))
    return [EvaluationEvent.model_validate_json(r.value) for r in rows]


def _aliases(st: Stack) -> dict[str, str]:
    rows = asyncio.run(pg(st.dsn, "SELECT alias, model_id FROM model_aliases"))
    return {r["alias"]: r["model_id"] for r in rows}


def test_only_a_promote_decision_moves_challenger(
    make_stack: Callable[..., Stack], tmp_path: Path
) -> None:
    st = make_stack()
    stub = tmp_path / "stub"
    ev = _evaluator(st, stub)
    ev.start()
    ev.wait_ready()
    _heldout(st, tmp_path)
    _send(st, _run(tmp_path, "run-good"))
    good = _evaluations(st, 1)[0]
    assert good.decision == "promote", ev.tail()
    _send(st, _run(tmp_path, "run-reject"))  # one after the other: the order is known
    _evaluations(st, 2)
    _send(st, _run(tmp_path, "run-insufficient"))
    decisions = {e.run_id: e.decision for e in _evaluations(st, 3)}
    assert decisions == {
        "run-good": "promote", "run-reject": "reject", "run-insufficient": "insufficient",
    }  # fmt: skip
    assert _aliases(st) == {"champion": good.model_id, "challenger": good.model_id}
    moved = asyncio.run(pg(st.dsn, "SELECT model_id FROM promotions WHERE alias='challenger'"))
    assert [r[0] for r in moved] == [good.model_id]  # never the rejected/insufficient ones
    assert count(st.dsn, "SELECT count(*) FROM models") == 3  # all three recorded


def test_a_champion_moved_during_the_evaluation_is_not_overwritten(
    make_stack: Callable[..., Stack], tmp_path: Path
) -> None:
    st = make_stack()
    stub = tmp_path / "stub"

    async def seed() -> None:  # the champion the candidate will be compared with
        conn = await asyncpg.connect(st.dsn)
        try:
            await conn.execute(
                "INSERT INTO models (model_id, agent, metadata) VALUES ('champion-a', 'support',"
                " '{}');"
                " INSERT INTO model_aliases (agent, alias, model_id)"
                " VALUES ('support', 'champion', 'champion-a')"
            )
        finally:
            await conn.close()

    ev = _evaluator(st, stub, "evaluate_moving_champion")
    ev.start()
    ev.wait_ready()  # its start applied the migrations
    asyncio.run(seed())
    _heldout(st, tmp_path)
    _send(st, _run(tmp_path, "run-late"))
    (event,) = _evaluations(st, 1)
    assert event.decision == "promote" and event.baseline_model == "champion-a", ev.tail()
    assert event.model_id == model_id_for(tmp_path / "run-late" / "adapter")
    # the operator's champion stands; the candidate was never compared with it
    assert _aliases(st)["champion"] == "champion-moved"
    assert count(st.dsn, "SELECT count(*) FROM promotions WHERE alias = 'champion'") == 0
    assert asyncio.run(read_topic(st.bootstrap, st.topic(topics.DEPLOYMENTS))) == []
    # recorded and published: the run needs re-evaluation against the new champion
    (row,) = asyncio.run(pg(st.dsn, "SELECT refusal, refused_at FROM evaluations"))
    assert row["refused_at"] is not None and "champion moved" in row["refusal"]
    assert "re-evaluation against champion-mov" in event.reasons[-1]
    assert calls(stub, "run-late") == 1


def test_kill_9_between_the_evaluations_registry_steps_leaves_a_consistent_registry(
    make_stack: Callable[..., Stack], tmp_path: Path
) -> None:
    st = make_stack()
    stub = tmp_path / "stub"
    first = _evaluator(st, stub)
    first.start()
    first.wait_ready()
    _heldout(st, tmp_path)
    # hold the agent's alias lock: the evaluator's registry writes stop where they take it
    loop = asyncio.new_event_loop()
    lock = loop.run_until_complete(asyncpg.connect(st.dsn))
    key = "rlstream.alias:support"
    loop.run_until_complete(lock.execute("SELECT pg_advisory_lock(hashtext($1))", key))
    try:
        _send(st, _run(tmp_path, "run-k"))
        waiting = (
            "SELECT count(*) FROM pg_stat_activity WHERE wait_event_type = 'Lock'"
            " AND query LIKE '%pg_advisory_xact_lock%'"
        )
        assert wait_until(lambda: count(st.dsn, waiting) == 1, timeout=90), first.tail()
        first.kill()  # SIGKILL while a registry step waits
    finally:
        loop.run_until_complete(lock.close())
        loop.close()
    assert calls(stub, "run-k") == 1

    fresh = _evaluator(st, stub)
    fresh.start()
    fresh.wait_ready()
    (event,) = {e.event_id: e for e in _evaluations(st, 1)}.values()
    mid = model_id_for(tmp_path / "run-k" / "adapter")
    assert event.decision == "promote" and event.model_id == mid
    # all of the evaluation's rows or none: the promote decision's challenger is there
    assert count(st.dsn, "SELECT count(*) FROM evaluations") == 1
    assert count(st.dsn, "SELECT count(*) FROM models WHERE model_id = $1", mid) == 1
    assert _aliases(st) == {"challenger": mid, "champion": mid}, fresh.tail()
    assert count(st.dsn, "SELECT count(*) FROM promotions WHERE announced_at IS NULL") == 0
    assert len(asyncio.run(read_topic(st.bootstrap, st.topic(topics.DEPLOYMENTS)))) == 1
    DeploymentEvent.model_validate_json(
        asyncio.run(read_topic(st.bootstrap, st.topic(topics.DEPLOYMENTS)))[0].value
    )
