"""From a finished evaluation to the registry: record it, then act on the gate's decision.

Used by the evaluator service and by the demo, so both leave the same rows and lineage:
run -> dataset, evaluation -> run, model -> run and -> evaluation, aliases and promotions.
Recording is one transaction and every id is derived from the run id, so doing it again
after a crash changes nothing. Only ``promote`` moves an alias: ``challenger`` when it is
recorded, ``champion`` (compare-and-set) when it is applied.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, JsonValue

from rlstream.events.models import EvaluationEvent
from rlstream.observability import tracing
from rlstream.registry.errors import ChampionMovedError
from rlstream.registry.ids import derived_id, evaluation_id_for, model_record
from rlstream.registry.registry import Registry
from rlstream.storage import EvaluationRecord, LineageEdge, PromotionRecord, RunRecord

#: the model's ``gate`` tag per decision (only ``promote`` ever moves an alias)
_GATE_TAG = {"promote": "passed", "reject": "rejected", "insufficient": "insufficient"}


class CandidateRun(BaseModel):
    """The finished training run whose adapter is the candidate."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    run_id: str
    agent: str
    dataset_id: str | None = None
    backend: str = "builtin"
    method: str = "sft"
    base_model: str | None = None
    artifact_dir: str | None = None


class Verdict(BaseModel):
    """The gate's decision and the figures it rests on (from eval-gate's report)."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    decision: Literal["promote", "reject", "insufficient"]
    reasons: tuple[str, ...] = ()
    metric: str | None = None
    baseline_value: float | None = None
    candidate_value: float | None = None
    delta_mean: float | None = None
    delta_ci_low: float | None = None
    delta_ci_high: float | None = None
    report: dict[str, JsonValue] = {}
    report_path: str | None = None

    @classmethod
    def from_report(
        cls, report: Mapping[str, Any], decision: str, reasons: Sequence[str], report_path: str
    ) -> Verdict:
        """The verdict on an evaluation report (``rlstream.evaluation.write_report``'s dict):
        the figures of its metric; the per-prompt rows stay on disk, not in the registry."""
        delta = report["delta"]
        metric = delta["metric"]
        return cls(
            decision=decision,
            reasons=tuple(reasons),
            metric=metric,
            baseline_value=report["baseline"][metric],
            candidate_value=report["candidate"][metric],
            delta_mean=delta["mean"],
            delta_ci_low=delta["ci_low"],
            delta_ci_high=delta["ci_high"],
            report={k: v for k, v in report.items() if k != "prompts"},
            report_path=report_path,
        )


def run_record(run: CandidateRun, dataset_known: bool) -> RunRecord:
    """The run row (its dataset id only when that dataset row exists: a foreign key)."""
    return RunRecord(
        run_id=run.run_id,
        agent=run.agent,
        backend=run.backend,
        method=run.method,
        status="succeeded",
        dataset_id=run.dataset_id if dataset_known else None,
        artifact_path=run.artifact_dir,
        spec={"base_model": run.base_model, "dataset_id": run.dataset_id},
    )


async def _dataset_edges(registry: Registry, run: CandidateRun) -> tuple[bool, list[LineageEdge]]:
    """Whether the run's dataset is stored; if not, the edge that still names it."""
    if run.dataset_id is None:
        return False, []
    if await registry.store.get_dataset(run.dataset_id) is not None:
        return True, []
    edge = LineageEdge(from_kind="run", from_id=run.run_id, to_kind="dataset", to_id=run.dataset_id)
    return False, [edge]


async def record_run(registry: Registry, run: CandidateRun) -> None:
    """Make sure the run row and its run -> dataset edge exist (idempotent)."""
    known, edges = await _dataset_edges(registry, run)
    await registry.store.create_run(run_record(run, known))
    if edges:
        await registry.store.add_lineage(edges)


async def stored_verdict(registry: Registry, run_id: str) -> EvaluationRecord | None:
    """The decision already recorded for this run, if any (redelivery must not re-evaluate)."""
    return await registry.store.get_evaluation(evaluation_id_for(run_id))


async def record_evaluation(
    registry: Registry,
    run: CandidateRun,
    weights_dir: Path,
    *,
    baseline_model: str,
    baseline_champion: str | None,
    verdict: Verdict,
) -> EvaluationEvent:
    """Store the run, the candidate model (tagged ``gate=passed|rejected|insufficient``),
    the evaluation and, on ``promote`` only, ``challenger`` -> the candidate: one
    transaction, so a crash leaves all or nothing. ``baseline_champion``: the champion the
    candidate was compared with (None: none, the base model), which promotion
    compares-and-sets. A run already recorded keeps its first decision. Returns the event
    to publish (through :func:`settle`)."""
    eid = evaluation_id_for(run.run_id)
    known, edges = await _dataset_edges(registry, run)
    model = model_record(
        weights_dir,
        agent=run.agent,
        run_id=run.run_id,
        dataset_sha256=run.dataset_id,
        evaluation_id=eid,
        base_model=run.base_model,
        tags={"gate": _GATE_TAG[verdict.decision]},
    )
    summary: dict[str, JsonValue] = verdict.model_dump(mode="json", exclude={"report"})
    evaluation = EvaluationRecord(
        evaluation_id=eid,
        agent=run.agent,
        baseline_model=baseline_model,
        candidate_model=model.model_id,
        decision=verdict.decision,
        report={"summary": summary, "report": verdict.report},
        run_id=run.run_id,
        baseline_champion=baseline_champion,
    )
    challenger = PromotionRecord(
        promotion_id=derived_id("challenger", run.agent, model.model_id, eid),
        agent=run.agent,
        model_id=model.model_id,
        alias="challenger",
        run_id=run.run_id,
        evaluation_id=eid,
        reason="gate: promote",
    )
    stored = await registry.store.record_evaluation(
        run_record(run, known),
        model,
        evaluation,
        edges=edges,
        challenger=challenger if verdict.decision == "promote" else None,
    )
    return event_from_record(stored)


def evaluation_event(
    eid: str, run_id: str | None, agent: str, baseline: str, model_id: str, verdict: Verdict
) -> EvaluationEvent:
    return EvaluationEvent(
        event_id=eid,
        evaluation_id=eid,
        run_id=run_id,
        agent=agent,
        model_id=model_id,
        baseline_model=baseline,
        candidate_model=model_id,
        **verdict.model_dump(exclude={"report"}),
    )


def event_from_record(record: EvaluationRecord) -> EvaluationEvent:
    """Rebuild the event from a stored evaluation (a redelivered run publishes it again)."""
    summary = record.report.get("summary")
    verdict = Verdict.model_validate(
        summary if isinstance(summary, dict) else {"decision": record.decision}
    )
    return evaluation_event(
        record.evaluation_id,
        record.run_id,
        record.agent,
        record.baseline_model,
        record.candidate_model,
        verdict,
    )


async def apply_decision(registry: Registry, event: EvaluationEvent) -> PromotionRecord | None:
    """Promote the candidate when the gate said ``promote`` (promotion id derived from the
    evaluation), compare-and-set against the champion it was evaluated with; ``reject``,
    ``insufficient`` and a champion that moved meanwhile (refusal recorded on the
    evaluation) promote nothing."""
    if event.decision != "promote":
        return None
    attrs = {"rlstream.evaluation_id": event.evaluation_id, "rlstream.model_id": event.model_id}
    with tracing.span("promote", attributes=attrs) as span:
        try:
            return await registry.promote(
                event.model_id,
                agent=event.agent,
                evaluation_id=event.evaluation_id,
                promotion_id=f"{event.evaluation_id}-champion",
                reason="gate",
            )
        except ChampionMovedError:
            if span is not None:
                span.set_attribute("rlstream.promotion", "refused: champion moved")
            return None


async def settle(
    registry: Registry, event: EvaluationEvent
) -> tuple[EvaluationEvent, PromotionRecord | None]:
    """Apply the decision, then the event to publish: a ``promote`` that was refused
    because the champion moved carries the refusal as its last reason."""
    promotion = await apply_decision(registry, event)
    if promotion is None and event.decision == "promote":
        stored = await registry.store.get_evaluation(event.evaluation_id)
        if stored is not None and stored.refusal:
            event = event.model_copy(update={"reasons": (*event.reasons, stored.refusal)})
    return event, promotion
