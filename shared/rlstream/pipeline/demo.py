"""run_demo: the whole loop on embedded defaults, from sample logs to a promoted model.

1. sample logs of a production order-support agent (:mod:`rlstream.sampledata.orders`)
2. ingest (redaction, task keys)  3. grade (``tool_calling``, reference from the logged label)
4. curate (held-out split: those task keys go to heldout.jsonl only)
5. train the small base model with LoRA SFT on the agent's passing conversations (CPU)
6. evaluate base vs base + adapter on the held-out prompts (the same decoding, paired CI)
7. gate  8. promote (registry on the embedded Postgres)  9. lineage back to the logs
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict, Field

from rlstream.curation import CurateOptions, curate, write_dataset
from rlstream.evaluation import (
    EvalRequest,
    GateConfig,
    GateDecision,
    ModelRef,
    decide,
    run_evaluation,
    write_report,
)
from rlstream.grading import GradeFailure, RewardSpec, grade_many
from rlstream.ingest import IngestOptions, IngestSummary, Reject, ingest_paths
from rlstream.jsonl import write_models
from rlstream.pipeline.batch import write_ingest_json
from rlstream.pipeline.stages import NullStages, Stages
from rlstream.rollout import ScoredRollout
from rlstream.sampledata.orders import AGENT, REWARD, write_order_logs
from rlstream.settings import Settings
from rlstream.transcript import Transcript


class DemoConfig(BaseModel):
    """The demo's embedded defaults (sized for a 2-core CPU in under 10 minutes)."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    folder: Path = Path("demo")
    seed: int = 7
    n_tasks: int = Field(default=1500, ge=10)
    rollouts_per_task: int = Field(default=3, ge=1)
    heldout_share: float = Field(default=0.1, gt=0.0, lt=1.0)
    #: evaluate on at most this many held-out prompts (None: all of them)
    eval_prompts: int | None = Field(default=150, ge=1)
    train_steps: int = Field(default=20, ge=1)
    learning_rate: float = 5e-4
    batch_size: int = Field(default=8, ge=1)
    max_length: int = Field(default=256, ge=32)
    lora_rank: int = Field(default=8, ge=1)
    k: int = Field(default=4, ge=1)
    greedy: bool = True
    max_new_tokens: int = Field(default=48, ge=8)
    eval_batch_size: int = Field(default=128, ge=1)
    base_model: str | None = None
    gate: GateConfig = Field(default_factory=GateConfig)
    #: record and promote in the registry (embedded Postgres); off for library tests
    promote: bool = True


class DemoResult(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")

    report: dict[str, Any]
    decision: GateDecision
    model_id: str | None
    out_dir: Path
    stage_seconds: dict[str, float]
    lineage_counts: dict[str, int] = Field(default_factory=dict)


class _Clock:
    def __init__(self, stages: Stages) -> None:
        self.stages = stages
        self.seconds: dict[str, float] = {}

    @contextmanager
    def stage(self, name: str, total: int | None = None) -> Iterator[list[str]]:
        """Times a stage; the body appends its one-line summary to the yielded list."""
        self.stages.start(name, total)
        t0 = time.perf_counter()
        summary: list[str] = []
        yield summary
        self.seconds[name] = round(time.perf_counter() - t0, 2)
        self.stages.done(name, self.seconds[name], summary[0] if summary else "")


def _ingest(logs: Path, stages: Stages) -> tuple[list[Transcript], int, IngestSummary]:
    run = ingest_paths([logs], IngestOptions())
    transcripts: list[Transcript] = []
    rejects = 0
    for item in run:
        if isinstance(item, Reject):
            rejects += 1
        else:
            transcripts.append(item)
            stages.advance(1)
    return transcripts, rejects, run.summary


def _grade(transcripts: list[Transcript], stages: Stages) -> tuple[list[ScoredRollout], int]:
    scored: list[ScoredRollout] = []
    failed = 0
    for r in grade_many(transcripts, RewardSpec.parse(REWARD)):
        if isinstance(r, GradeFailure):
            failed += 1
        else:
            scored.append(r)
        stages.advance(1)
    return scored, failed


def _increments(st: Stages) -> Any:
    """run_evaluation reports cumulative prompts per model; the display wants increments."""
    seen: dict[str, int] = {}

    def progress(model: str, done: int, total: int) -> None:
        st.advance(done - seen.get(model, 0))
        seen[model] = done

    return progress


def run_demo(
    config: DemoConfig | None = None,
    stages: Stages | None = None,
    settings: Settings | None = None,
) -> DemoResult:
    """Run every stage; writes everything under ``config.folder`` (logs/ and out/)."""
    from rlstream.training import TrainConfig, ensure_base_model, train

    cfg = config or DemoConfig()
    st = stages or NullStages()
    clock = _Clock(st)
    out = cfg.folder / "out"
    out.mkdir(parents=True, exist_ok=True)
    logs = cfg.folder / "logs" / "orders.jsonl"

    with clock.stage("sample logs") as s:
        n = write_order_logs(logs, cfg.seed, cfg.n_tasks, cfg.rollouts_per_task)
        s.append(f"{n:,} conversations of {AGENT} ({cfg.n_tasks:,} tasks) -> {logs}")
    with clock.stage("ingest", n) as s:
        transcripts, rejects, summary = _ingest(logs, st)
        write_models(out / "transcripts.jsonl", transcripts)
        write_ingest_json(out, [summary])
        s.append(f"{len(transcripts):,} transcripts (PII redacted, task keys), {rejects} rejected")
    with clock.stage("grade", len(transcripts)) as s:
        scored, failed = _grade(transcripts, st)
        write_models(out / "scored.jsonl", scored)
        passed = sum(r.passed for r in scored)
        s.append(f"{len(scored):,} graded by {REWARD}: {passed:,} pass, {failed} ungradable")
    dataset_dir = out / "dataset"
    with clock.stage("curate") as s:
        result = curate(scored, CurateOptions(heldout_share=cfg.heldout_share))
        manifest = write_dataset(result, dataset_dir)
        s.append(
            f"{manifest.counts['sft_rows']:,} SFT rows; {len(result.heldout)} task keys held out"
            f" -> {dataset_dir}"
        )
    with clock.stage("train", cfg.train_steps) as s:
        base = Path(cfg.base_model) if cfg.base_model else ensure_base_model()
        run = train(
            dataset_dir,
            output_dir=out / "run",
            config=TrainConfig(
                method="sft",
                max_steps=cfg.train_steps,
                learning_rate=cfg.learning_rate,
                batch_size=cfg.batch_size,
                max_length=cfg.max_length,
                lora_rank=cfg.lora_rank,
                lora_alpha=2 * cfg.lora_rank,
                seed=cfg.seed,
                device="cpu",
            ),
            base_model=base,
            progress=lambda step, total, metrics: st.advance(1),
        )
        if run.status != "succeeded" or run.adapter_dir is None:
            from rlstream.training import TrainingError

            raise TrainingError(f"training failed: {run.reason}")
        s.append(f"LoRA SFT, {run.steps} steps -> {run.adapter_dir}")
    request = EvalRequest(
        baseline=ModelRef.of(base, None, "baseline"),
        candidate=ModelRef.of(base, run.adapter_dir, "candidate"),
        heldout=dataset_dir / "heldout.jsonl",
        reward_spec=REWARD,
        k=cfg.k,
        greedy=cfg.greedy,
        max_new_tokens=cfg.max_new_tokens,
        seed=cfg.seed,
        batch_size=cfg.eval_batch_size,
        max_prompts=cfg.eval_prompts,
        device="cpu",
        sampler="hf",
        training_dataset=dataset_dir,
    )
    n_eval = min(len(result.heldout), cfg.eval_prompts or len(result.heldout))
    with clock.stage("evaluate", 2 * n_eval) as s:
        report = run_evaluation(request, _increments(st))
        s.append(
            f"pass@1 {report.baseline.pass_at_1:.3f} -> {report.candidate.pass_at_1:.3f} on "
            f"{len(report.prompts)} held-out prompts"
        )
    with clock.stage("gate") as s:
        decision = decide(report, cfg.gate)
        s.append(f"{decision.decision}: {decision.reasons[0]}")
    data = write_report(report, decision, out, gate=cfg.gate)
    model_id: str | None = None
    counts: dict[str, int] = {}
    if cfg.promote:
        model_id, counts = _promote(
            cfg, clock, settings, data, decision, run, base, dataset_dir, manifest.dataset_id
        )
        data = write_report(report, decision, out, gate=cfg.gate, model_id=model_id)
    return DemoResult(
        report=data,
        decision=decision,
        model_id=model_id,
        out_dir=out,
        stage_seconds=clock.seconds,
        lineage_counts=counts,
    )


def _promote(
    cfg: DemoConfig,
    clock: _Clock,
    settings: Settings | None,
    data: dict[str, Any],
    decision: GateDecision,
    run: Any,
    base: Path,
    dataset_dir: Path,
    dataset_id: str,
) -> tuple[str, dict[str, int]]:
    import orjson

    from rlstream.pipeline.registry_step import promote_and_trace
    from rlstream.registry import CandidateRun, Verdict

    out = cfg.folder / "out"
    with clock.stage("promote") as s:
        promotion = asyncio.run(
            promote_and_trace(
                settings or Settings(),
                dataset_dir=dataset_dir,
                scored=out / "scored.jsonl",
                run=CandidateRun(
                    run_id=run.run_id,
                    agent=AGENT,
                    dataset_id=dataset_id,
                    backend=run.backend,
                    method=run.method,
                    base_model=str(base),
                    artifact_dir=run.output_dir,
                ),
                adapter_dir=Path(run.adapter_dir),
                baseline_model=str(base),
                verdict=Verdict.from_report(
                    data, decision.decision, decision.reasons, str(out / "report.json")
                ),
                heldout_share=cfg.heldout_share,
            )
        )
        what = "promoted to champion" if promotion.promoted else "recorded, not promoted"
        what += f" ({promotion.refusal})" if promotion.refusal else ""
        s.append(f"model {promotion.model_id[:16]} {what}")
    with clock.stage("lineage") as s:
        (out / "lineage.json").write_bytes(
            orjson.dumps(promotion.lineage, option=orjson.OPT_INDENT_2)
        )
        c = promotion.lineage_counts
        s.append(
            f"model -> {c.get('run', 0)} run -> {c.get('dataset', 0)} dataset -> "
            f"{c.get('rollout', 0):,} rollouts -> {c.get('conversation', 0):,} conversations"
        )
    return promotion.model_id, promotion.lineage_counts
