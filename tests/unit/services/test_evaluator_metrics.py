"""The evaluator's shell counts training run states (once per event id), evaluations by
decision, their duration, and promotions (promoted / refused)."""

from __future__ import annotations

from types import SimpleNamespace
from typing import Any

import pytest
from prometheus_client import REGISTRY

from rlstream.events import EvaluationEvent, TrainingRunEvent
from rlstream.services.evaluator import handler as mod
from rlstream.services.evaluator.handler import EvaluatorHandler

pytestmark = pytest.mark.unit


def _value(name: str, **labels: str) -> float:
    return REGISTRY.get_sample_value(name, labels) or 0.0


def _run(state: str, run_id: str = "run-m1") -> TrainingRunEvent:
    return TrainingRunEvent(
        run_id=run_id,
        dataset_id="ds",
        agent="a",
        reward_spec="r",
        state=state,  # type: ignore[arg-type]
        backend="builtin",
        method="sft",
        launcher="local",
    )


def _handler() -> EvaluatorHandler:
    rt = SimpleNamespace(settings=SimpleNamespace(max_message_bytes=1 << 20))
    return EvaluatorHandler(rt, None, lambda: SimpleNamespace(sink=None), None)  # type: ignore[arg-type]


def test_training_states_are_counted_once_per_event_id() -> None:
    h = _handler()
    before = {s: _value("rlstream_training_runs_total", state=s) for s in ("launched", "failed")}
    for state in ("launched", "launched", "failed"):  # the watcher and the trainer both report
        h.decode(SimpleNamespace(value=_run(state).dump_json()))
    h.decode(SimpleNamespace(value=_run("failed", "run-m2").dump_json()))
    assert _value("rlstream_training_runs_total", state="launched") == before["launched"] + 1
    assert _value("rlstream_training_runs_total", state="failed") == before["failed"] + 2


def _evaluation(decision: str) -> EvaluationEvent:
    return EvaluationEvent(
        event_id="eval-run-m1",
        evaluation_id="eval-run-m1",
        run_id="run-m1",
        agent="a",
        model_id="m",
        baseline_model="b",
        candidate_model="c",
        decision=decision,  # type: ignore[arg-type]
    )


@pytest.mark.parametrize(
    ("decision", "promotion", "outcome"),
    [
        ("promote", SimpleNamespace(promotion_id="p1"), "promoted"),
        ("promote", None, "refused"),
        ("reject", None, None),
    ],
)
async def test_evaluations_and_promotions_are_counted(
    monkeypatch: pytest.MonkeyPatch, decision: str, promotion: Any, outcome: str | None
) -> None:
    event = _evaluation(decision)

    async def none(*_: Any, **__: Any) -> None:
        return None

    async def recorded(*_: Any, **__: Any) -> EvaluationEvent:
        return event

    async def settled(_: Any, e: EvaluationEvent) -> tuple[EvaluationEvent, Any]:
        return e, promotion

    monkeypatch.setattr(mod, "stored_verdict", none)
    monkeypatch.setattr(mod, "record_evaluation", recorded)
    monkeypatch.setattr(mod, "settle", settled)
    monkeypatch.setattr(mod, "publish_evaluation", none)
    h = _handler()
    job = SimpleNamespace(
        base_model="b", candidate_adapter=None, baseline_label="b", baseline_model_id=None
    )
    monkeypatch.setattr(h, "job_for", lambda *_: _job(job))
    monkeypatch.setattr(h, "verdict", none)
    evals = _value("rlstream_evaluations_total", decision=decision)
    promoted = {o: _value("rlstream_promotions_total", outcome=o) for o in ("promoted", "refused")}
    seconds = _value("rlstream_evaluation_seconds_count")

    await h.process(_run("succeeded"))

    assert _value("rlstream_evaluations_total", decision=decision) == evals + 1
    assert _value("rlstream_evaluation_seconds_count") == seconds + 1
    for o in ("promoted", "refused"):
        assert _value("rlstream_promotions_total", outcome=o) == promoted[o] + (o == outcome)


async def _job(job: Any) -> Any:
    return job
