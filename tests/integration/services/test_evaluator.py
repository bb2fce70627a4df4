"""The evaluator service on real Kafka + Postgres: a succeeded training run is evaluated
once, its EvaluationEvent published, and the candidate promoted (DeploymentEvent);
redelivery evaluates and promotes nothing again; kill -9 mid-evaluation loses no decision.

The evaluation itself is the stub in evaluator_stub.py (counts its calls, can be slow):
eval-gate's rlstream.evaluation runs real generations and has its own tests; this file
tests the service around it.
"""

from __future__ import annotations

import asyncio
import json
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from evaluator_stub import calls
from helpers import count, pg, wait_until

from rlstream.events import DeploymentEvent, EvaluationEvent, TrainingRunEvent, topics
from rlstream.registry import model_id_for
from rlstream_testkit.stack import Stack, produce, read_topic, wait_for_count

pytestmark = [pytest.mark.kafka, pytest.mark.postgres, pytest.mark.redis]

HERE = Path(__file__).resolve().parent


def _run_output(root: Path, run_id: str) -> Path:
    out = root / run_id
    (out / "adapter").mkdir(parents=True)
    (out / "adapter" / "adapter_config.json").write_text(json.dumps({"r": 8}))
    (out / "adapter" / "adapter_model.safetensors").write_bytes(run_id.encode() * 100)
    (out / "metrics.json").write_text("{}")
    return out


def _event(run_id: str, state: str, artifact: Path | None) -> tuple[bytes, bytes]:
    ev = TrainingRunEvent(
        run_id=run_id, dataset_id="d" * 64, agent="support", reward_spec="tool_calling",
        state=state, backend="builtin", method="sft", base_model="/models/base",
        artifact_dir=str(artifact) if artifact else None, launcher="local",
    )  # fmt: skip
    return run_id.encode(), ev.dump_json()


def _evaluator(st: Stack, stub: Path, **env: str) -> Any:
    return st.service(
        "evaluator",
        RLSTREAM_EVALUATE_FUNCTION="evaluator_stub:evaluate",
        PYTHONPATH=str(HERE),
        STUB_DIR=str(stub),
        **env,
    )


def _values(st: Stack, topic: str, model: Any) -> list[Any]:
    return [
        model.model_validate_json(r.value)
        for r in asyncio.run(read_topic(st.bootstrap, st.topic(topic)))
    ]


def test_succeeded_run_is_evaluated_once_published_and_promoted(
    make_stack: Callable[..., Stack], tmp_path: Path
) -> None:
    st = make_stack()
    stub = tmp_path / "stub"
    ev = _evaluator(st, stub)
    ev.start()
    ev.wait_ready()
    good, bad = _run_output(tmp_path, "run-good"), _run_output(tmp_path, "run-reject")
    asyncio.run(
        produce(
            st.bootstrap,
            st.topic(topics.TRAINING),
            [
                _event("run-good", "started", None),
                _event("run-good", "succeeded", good),
                _event("run-good", "succeeded", good),  # the trainer and the watcher both say so
                _event("run-reject", "succeeded", bad),
                _event("run-failed", "failed", None),
                (b"junk", b"{not json"),
                _event("run-empty", "succeeded", tmp_path / "no-such-output"),
            ],
        )
    )
    asyncio.run(wait_for_count(st.bootstrap, st.topic(topics.EVALUATIONS), 2, timeout=90))
    evals = {e.run_id: e for e in _values(st, topics.EVALUATIONS, EvaluationEvent)}
    assert set(evals) == {"run-good", "run-reject"}
    assert evals["run-good"].decision == "promote" and evals["run-reject"].decision == "reject"
    assert evals["run-good"].model_id == model_id_for(good / "adapter")
    assert evals["run-good"].event_id == "eval-run-good"
    deps = _values(st, topics.DEPLOYMENTS, DeploymentEvent)
    assert [(d.model_id, d.event_id) for d in deps] == [
        (evals["run-good"].model_id, "eval-run-good-champion")
    ]
    champion = asyncio.run(pg(st.dsn, "SELECT model_id FROM model_aliases WHERE alias='champion'"))
    assert [r[0] for r in champion] == [evals["run-good"].model_id]
    assert (calls(stub, "run-good"), calls(stub, "run-reject"), calls(stub, "run-failed")) == (
        1,
        1,
        0,
    )
    job = json.loads(next(stub.glob("call-run-good-*")).read_text())
    assert (
        job["baseline_adapter"] is None and job["base_model"] == "/models/base"
    )  # no champion yet

    # redelivery: a second consumer group reads the whole topic again from the start
    replay = _evaluator(st, stub, RLSTREAM_CONSUMER_GROUP=f"{st.prefix}replay")
    replay.start()
    replay.wait_ready()
    assert wait_until(
        lambda: len(_values(st, topics.EVALUATIONS, EvaluationEvent)) >= 4, timeout=60
    ), replay.tail()
    time.sleep(1)
    again = _values(st, topics.EVALUATIONS, EvaluationEvent)
    assert {e.event_id for e in again} == {"eval-run-good", "eval-run-reject"}  # same ids
    assert (calls(stub, "run-good"), calls(stub, "run-reject")) == (1, 1)  # not evaluated again
    assert count(st.dsn, "SELECT count(*) FROM evaluations") == 2
    assert count(st.dsn, "SELECT count(*) FROM promotions WHERE alias = 'champion'") == 1
    assert len(_values(st, topics.DEPLOYMENTS, DeploymentEvent)) == 1  # not promoted again
    dlq = st.topic(topics.dlq(topics.TRAINING))
    dead = wait_until(
        lambda: (r := asyncio.run(read_topic(st.bootstrap, dlq))) and len(r) >= 4 and r
    )
    codes = sorted(json.loads(r.value)["error_code"] for r in dead)
    assert codes == ["input_error", "input_error", "parse_error", "parse_error"]  # twice: replay
    reasons = [json.loads(r.value)["error_message"] for r in dead]
    assert any("no-such-output" in r for r in reasons)


def test_kill_9_mid_evaluation_loses_no_decision(
    make_stack: Callable[..., Stack], tmp_path: Path
) -> None:
    st = make_stack()
    stub = tmp_path / "stub"
    slow = _evaluator(st, stub, STUB_SLEEP="120")
    slow.start()
    slow.wait_ready()
    out = _run_output(tmp_path, "run-k")
    asyncio.run(
        produce(st.bootstrap, st.topic(topics.TRAINING), [_event("run-k", "succeeded", out)])
    )
    assert wait_until(lambda: calls(stub, "run-k") == 1, timeout=60), slow.tail()
    # the evaluation runs in a worker thread: health answers meanwhile
    t0 = time.monotonic()
    assert slow.http("/healthz")[0] == 200 and time.monotonic() - t0 < 2
    slow.kill()  # SIGKILL, mid-evaluation
    assert count(st.dsn, "SELECT count(*) FROM evaluations") == 0
    assert asyncio.run(read_topic(st.bootstrap, st.topic(topics.EVALUATIONS))) == []

    fresh = _evaluator(st, stub, STUB_SLEEP="0")
    fresh.start()
    fresh.wait_ready()
    asyncio.run(wait_for_count(st.bootstrap, st.topic(topics.DEPLOYMENTS), 1, timeout=90))
    assert calls(stub, "run-k") == 2  # the killed attempt and the re-run: one decision
    evals = _values(st, topics.EVALUATIONS, EvaluationEvent)
    assert [e.event_id for e in evals] == ["eval-run-k"] and evals[0].decision == "promote"
    assert count(st.dsn, "SELECT count(*) FROM evaluations") == 1
    assert count(st.dsn, "SELECT count(*) FROM promotions WHERE alias = 'champion'") == 1
    assert count(st.dsn, "SELECT count(*) FROM promotions WHERE announced_at IS NULL") == 0
