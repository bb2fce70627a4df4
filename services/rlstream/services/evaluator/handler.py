"""Evaluator: a succeeded training run -> evaluation -> EvaluationEvent -> promotion.

Per run, in this order, each step idempotent by the run id:
1. the decision already stored for the run (``eval-<run_id>``) is reused: a redelivered
   event never evaluates again; otherwise the evaluation runs in a worker thread (the
   event loop keeps serving health checks and Kafka heartbeats) against the champion read
   now (``EvalJob.baseline_model_id``);
2. run, candidate model (``gate=...`` tag), evaluation (with the champion it was compared
   with) and, on promote only, ``challenger``: one transaction;
3. when the gate said promote: the promotion transaction (id ``<evaluation>-champion``),
   which installs the candidate only while the champion is still the one it was compared
   with (else nothing moves and the refusal is recorded on the evaluation), the deploy
   target's patch and the ``DeploymentEvent``;
4. ``EvaluationEvent`` is published (its id is the evaluation id; a refused promotion
   adds the refusal as its last reason).
The batch's offsets are committed only after all of it, so a kill -9 anywhere loses no
decision: the run comes again and continues from what Postgres already holds.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections import OrderedDict
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from rlstream.delivery import Rejected, decode_all
from rlstream.delivery.batch import reject_or_retry
from rlstream.delivery.runtime import Runtime
from rlstream.errors import ConfigError, InputError, MessageTooLarge
from rlstream.evaluation import HeldoutLeakError
from rlstream.events import EvaluationEvent, TrainingRunEvent
from rlstream.observability import tracing
from rlstream.observability.metrics import (
    EVALUATION_SECONDS,
    EVALUATIONS,
    PROMOTIONS,
    TRAINING_RUNS,
)
from rlstream.registry import (
    CandidateRun,
    Registry,
    Verdict,
    event_from_record,
    publish_evaluation,
    record_evaluation,
    settle,
    stored_verdict,
)
from rlstream.services.evaluator.evaluate import EvalJob, Evaluate
from rlstream.services.evaluator.heldout import (
    accumulated_heldout,
    leak_from_error,
    leak_verdict,
    trained_keys,
)
from rlstream.services.evaluator.settings import EvaluatorSettings

log = logging.getLogger("rlstream.services.evaluator")


def candidate_adapter(artifact_dir: str | None) -> Path:
    """``<run output>/adapter`` (the trainer's layout), or the folder itself if it is one."""
    if not artifact_dir:
        raise InputError("succeeded run has no artifact_dir")
    root = Path(artifact_dir)
    for cand in (root / "adapter", root):
        if (cand / "adapter_config.json").exists() or (cand / "config.json").exists():
            return cand
    raise InputError(f"run output {root} holds no adapter (adapter/adapter_config.json)")


class EvaluatorHandler:
    def __init__(
        self,
        rt: Runtime,
        settings: EvaluatorSettings,
        registry_factory: Any,
        evaluate: Evaluate,
    ) -> None:
        self.rt = rt
        self.settings = settings
        self.registry_factory = registry_factory
        self.evaluate = evaluate
        #: training event ids already counted (a retried batch is decoded again)
        self._counted: OrderedDict[str, None] = OrderedDict()

    @property
    def registry(self) -> Registry:
        return self.registry_factory()  # type: ignore[no-any-return]

    def decode(self, record: Any) -> TrainingRunEvent | None:
        value = record.value or b""
        if len(value) > self.rt.settings.max_message_bytes:
            raise MessageTooLarge(f"{len(value)} bytes")
        event = TrainingRunEvent.model_validate_json(value)
        self._count_run(event)
        return event if event.state == "succeeded" else None

    def _count_run(self, event: TrainingRunEvent, keep: int = 10_000) -> None:
        """rlstream_training_runs_total: every state change once per event id (the watcher
        and the trainer may both publish one; a retried batch is decoded again)."""
        if event.event_id in self._counted:
            return
        self._counted[event.event_id] = None
        if len(self._counted) > keep:
            self._counted.popitem(last=False)
        TRAINING_RUNS.labels(event.state).inc()

    async def handle(self, records: Sequence[Any]) -> list[Rejected]:
        decoded = decode_all(records, self.decode)
        rejected = list(decoded.rejected)
        done: set[str] = set()
        for item in decoded.items:  # the watcher and the trainer may both report a run
            if item.value.run_id in done:
                continue
            done.add(item.value.run_id)
            try:
                with tracing.activate(item.record):  # the run's trace (the trainer's span)
                    await self.process(item.value)
            except Exception as exc:  # transient -> RetryBatch (raised); data -> DLQ
                rejected.append(reject_or_retry(item.record, exc))
        return rejected

    async def process(self, run: TrainingRunEvent) -> EvaluationEvent:
        registry = self.registry
        stored = await stored_verdict(registry, run.run_id)
        if stored is not None:
            log.info("run already evaluated; reusing the decision", extra={"run_id": run.run_id})
            event = event_from_record(stored)
        else:
            job = await self.job_for(registry, run)
            started = time.monotonic()
            attrs = {"rlstream.run_id": run.run_id, "rlstream.dataset_id": run.dataset_id}
            with tracing.span("evaluate", attributes=attrs) as span:
                verdict = await self.verdict(job)
                if span is not None:
                    span.set_attribute("rlstream.decision", verdict.decision)
            EVALUATION_SECONDS.observe(time.monotonic() - started)
            event = await record_evaluation(
                registry,
                CandidateRun(
                    run_id=run.run_id,
                    agent=run.agent,
                    dataset_id=run.dataset_id,
                    backend=run.backend,
                    method=run.method,
                    base_model=job.base_model,
                    artifact_dir=run.artifact_dir,
                ),
                job.candidate_adapter,
                baseline_model=job.baseline_label,
                baseline_champion=job.baseline_model_id,
                verdict=verdict,
            )
        event, promotion = await settle(registry, event)
        if stored is None:  # a reused verdict (redelivered run) was counted when decided
            EVALUATIONS.labels(event.decision).inc()
            if event.decision == "promote":
                PROMOTIONS.labels("promoted" if promotion else "refused").inc()
        await publish_evaluation(registry.sink, event)
        log.info(
            "decision applied",
            extra={
                "run_id": run.run_id,
                "decision": event.decision,
                "promotion_id": promotion.promotion_id if promotion else None,
            },
        )
        return event

    async def verdict(self, job: EvalJob) -> Verdict:
        """The evaluation's verdict; a run that trained on held-out prompts is a recorded
        rejection listing the keys, not an evaluation and not a dead letter."""
        if job.leaked_task_keys:
            log.warning(
                "candidate trained on held-out prompts: rejected",
                extra={"run_id": job.run_id, "leaked": len(job.leaked_task_keys)},
            )
            return leak_verdict(job.leaked_task_keys)
        log.info("evaluating", extra={"run_id": job.run_id, "baseline": job.baseline_label})
        try:
            return await asyncio.to_thread(self.evaluate, job)
        except HeldoutLeakError as exc:
            return leak_from_error(exc)

    async def job_for(self, registry: Registry, run: TrainingRunEvent) -> EvalJob:
        s = self.settings
        adapter = candidate_adapter(run.artifact_dir)
        champion_id = await registry.store.get_alias(run.agent, "champion")
        champion = await registry.store.get_model(champion_id) if champion_id else None
        base = s.base_model or run.base_model or await asyncio.to_thread(_bundled_base)
        dataset = await registry.store.get_dataset(run.dataset_id)
        training = Path(dataset.path) if dataset else None
        agent = dataset.agent if dataset else run.agent  # whose held-out set: the data's
        report_dir = s.reports_path() / run.run_id
        cap = s.eval_max_prompts or s.eval_heldout_cap
        try:  # the agent's accumulated held-out set, not only this release's few keys
            heldout, keys = await accumulated_heldout(
                registry.store, agent, report_dir / "heldout.jsonl", cap
            )
        except ConfigError as exc:  # a release's held-out file is bad: dead-letter the run
            raise InputError(f"run {run.run_id}: {exc}") from exc
        leaked = await trained_keys(registry.store, agent, keys, training)
        return EvalJob(
            run_id=run.run_id,
            agent=run.agent,
            reward_spec=run.reward_spec,
            reward_config=s.reward_config,
            dataset_id=run.dataset_id,
            heldout=heldout,
            training_dataset=training,
            leaked_task_keys=tuple(sorted(leaked)),
            base_model=str(base),
            baseline_adapter=Path(champion.path) if champion and champion.path else None,
            baseline_label=champion.model_id if champion else Path(str(base)).name,
            baseline_model_id=champion.model_id if champion else None,
            candidate_adapter=adapter,
            report_dir=report_dir,
            k=s.eval_k,
            greedy=s.eval_greedy,
            max_prompts=s.eval_max_prompts,
            max_new_tokens=s.eval_max_new_tokens,
            seed=s.eval_seed,
            environment=s.environment(),
            metric=s.gate_metric,
            min_effect=s.gate_min_effect,
            min_prompts=s.gate_min_prompts,
        )


def _bundled_base() -> str:
    from rlstream.training.basemodel import ensure_base_model

    return str(ensure_base_model())
