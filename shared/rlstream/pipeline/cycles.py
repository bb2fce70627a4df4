"""run_cycles: the flywheel, ``rlstream demo --cycles N``.

``rlstream serve`` serves the champion (the base model at first) on a loopback port.
Simulated customers (the order-support sample data's, each with the expected call the
ticket system records afterwards: the grader's context) send their openings through the
OpenAI chat-completions API. Each cycle's served conversations (JSONL, tagged with the
serving model id) are ingested and graded with the cycle's slice of production logs (the
larger logged model keeps answering too). The pending pool (every graded rollout no earlier
release took; a rollout is released once) is curated with the same held-out task keys every
cycle, a fresh LoRA adapter is trained from the base model on the release, evaluated
against the champion on held-out prompts, and gated. On
``promote`` the registry moves the champion and the server hot-swaps to it; otherwise the
champion keeps serving. Every cycle records the held-out metric with its CI, the decision,
the model serving before and after, and how many conversations each model served.
"""

from __future__ import annotations

import asyncio
import time
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import orjson
from pydantic import BaseModel, ConfigDict, Field

from rlstream.curation import CurateOptions, curate, write_dataset
from rlstream.evaluation import EvalRequest, GateConfig, ModelRef, decide, run_evaluation
from rlstream.evaluation import write_report as write_eval_report
from rlstream.evaluation.models import GuardRule, default_guards
from rlstream.jsonl import write_models
from rlstream.pipeline.demo import _grade, _ingest
from rlstream.pipeline.served import ServedModel
from rlstream.pipeline.stages import NullStages, Stages
from rlstream.rollout import ScoredRollout
from rlstream.sampledata.orders import AGENT, REWARD, order_records
from rlstream.settings import Settings

CYCLES_FILE = "cycles.json"


def cycles_gate(min_prompts: int = 30) -> GateConfig:
    """The default gate with the ``tool_error_rate`` guard at 0.30 instead of 0.05.

    The base model never tries a tool call, so cycle 1's candidate is judged alone against
    an absolute limit (docs/gate.md, guards): at the demo's ~30 held-out prompts even a
    candidate with no tool error at all has a 95% Wilson upper bound of 0.083, so 0.05 could
    never hold and the first cycle could never promote. At 0.30 and 30 prompts a candidate
    passes with at most 4 erring prompts (13%): one whose calls truly fail 10% / 20% / 30% of
    the time passes the guard with probability 0.83 / 0.26 / 0.03 (binomial). Only the
    demo's: a production gate keeps 0.05."""
    guards = {**default_guards(), "tool_error_rate": GuardRule(worse="higher", tolerance=0.30)}
    return GateConfig(min_prompts=min_prompts, guards=guards)


class CyclesConfig(BaseModel):
    """Sizes for a quiet 2-core CPU (``--cycles 3``: tens of minutes; the CI test's: small)."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    folder: Path = Path("demo")
    cycles: int = Field(default=3, ge=1)
    seed: int = 7
    #: production logs arriving per cycle (tasks x rollouts of the logged large model)
    n_tasks: int = Field(default=300, ge=10)
    rollouts_per_task: int = Field(default=3, ge=1)
    #: simulated customers per cycle, and the answers each gets (a group per task)
    users_per_cycle: int = Field(default=40, ge=1)
    samples_per_user: int = Field(default=2, ge=1)
    temperature: float = Field(default=0.7, ge=0.0)
    heldout_share: float = Field(default=0.1, gt=0.0, lt=1.0)
    eval_prompts: int = Field(default=60, ge=1)
    train_steps: int = Field(default=10, ge=1)
    learning_rate: float = 5e-4
    batch_size: int = Field(default=8, ge=1)
    max_new_tokens: int = Field(default=48, ge=8)
    eval_batch_size: int = Field(default=128, ge=1)
    base_model: str | None = None
    gate: GateConfig = Field(default_factory=cycles_gate)
    #: the server's command (``rlstream serve``'s argv without the model and options)
    serve_argv: tuple[str, ...] = ("rlstream", "serve")


class CycleRecord(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")

    cycle: int
    serving_before: str
    serving_after: str
    conversations: int
    served_pass_rate: float
    #: every served conversation so far, by the model that produced it
    conversations_per_model: dict[str, int]
    dataset_rows: dict[str, dict[str, int]]
    metric: str
    baseline: float
    candidate: float
    delta: float
    ci_low: float
    ci_high: float
    n_prompts: int
    decision: str
    reason: str
    candidate_model: str
    swap: str | None = None
    seconds: dict[str, float] = Field(default_factory=dict)


def _users(cfg: CyclesConfig, cycle: int) -> list[dict[str, Any]]:
    """This cycle's customers: fresh order tasks (one record each), never the seed's."""
    records = order_records(cfg.seed + 1000, cfg.users_per_cycle * cfg.cycles, 1)
    return records[(cycle - 1) * cfg.users_per_cycle : cycle * cfg.users_per_cycle]


def _serve_users(server: ServedModel, cfg: CyclesConfig, cycle: int, st: Stages) -> dict[str, Any]:
    """Each customer's opening, ``samples_per_user`` times; returns conversation id ->
    the ticket system's label (what the grader checks the answer against)."""
    labels: dict[str, Any] = {}
    for u in _users(cfg, cycle):
        for i in range(cfg.samples_per_user):
            cid = f"{u['id']}-c{cycle}s{i}"
            body = {
                "model": server.model_id,
                "messages": u["messages"][:2],
                "max_tokens": cfg.max_new_tokens,
                "temperature": cfg.temperature,
                "seed": cfg.seed + i,
                "metadata": {**u["metadata"], "agent": AGENT},
            }
            server.chat(body, cid)
            labels[cid] = u["label"]
            st.advance(1)
    return labels


def _labelled(served_log: Path, labels: dict[str, Any], out: Path) -> int:
    """The served records of this cycle with their label joined (the ticket outcome)."""
    lines = []
    for line in served_log.read_bytes().splitlines():
        rec = orjson.loads(line)
        if rec.get("conversation_id") in labels:
            rec["label"] = labels[rec["conversation_id"]]
            rec["agent"] = rec.get("agent") or AGENT
            lines.append(orjson.dumps(rec))
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_bytes(b"".join(x + b"\n" for x in lines))
    return len(lines)


def run_cycles(
    config: CyclesConfig | None = None,
    stages: Stages | None = None,
    settings: Settings | None = None,
) -> list[CycleRecord]:
    """Run ``config.cycles`` turns of the loop; writes ``out/cycles.json`` after each."""
    from rlstream.training import ensure_base_model

    cfg = config or CyclesConfig()
    st = stages or NullStages()
    settings = _fresh_start(cfg, settings)
    out = cfg.folder / "out"
    out.mkdir(parents=True, exist_ok=True)
    base = Path(cfg.base_model) if cfg.base_model else ensure_base_model()
    server = ServedModel(cfg.serve_argv, out / "served.jsonl", out / "serve.log")
    loop = _Loop(cfg, server, st, settings, base, champion=(f"base:{base.name}", None))
    server.start(base, loop.champion[0])
    records: list[CycleRecord] = []
    try:
        for cycle in range(1, cfg.cycles + 1):
            rec = _cycle(loop, cycle)
            records.append(rec)
            (out / CYCLES_FILE).write_bytes(
                orjson.dumps([r.model_dump(mode="json") for r in records], option=_INDENT)
            )
    finally:
        server.stop()
    return records


_INDENT = orjson.OPT_INDENT_2
#: the embedded registry of a ``--cycles`` run, inside its folder; never the default data
#: dir's name, so ``--dir .`` does not clear the working directory's ``.rlstream``
STATE_DIR = ".rlstream-cycles"


def _fresh_start(cfg: CyclesConfig, settings: Settings | None) -> Settings:
    """Every run tells the story from the base model, in a world of its own.

    The served conversation ids and the production logs are the same for a seed, so an
    earlier run's files in ``cfg.folder`` (served.jsonl is appended to) or its registry
    (its rollouts already released, its champion) would mix into this one. Without a DSN
    the registry is an embedded PostgreSQL in ``cfg.folder/.rlstream-cycles``, not the working
    directory's shared data dir; the run's own files and state are removed first. With a
    configured DSN nothing is removed there: a rerun against it is refused by the store
    (already-released rollouts), with the reason."""
    import shutil

    settings = settings or Settings()
    if settings.postgres_dsn is None:
        settings = settings.model_copy(update={"data_dir": cfg.folder / STATE_DIR})
        shutil.rmtree(cfg.folder / STATE_DIR, ignore_errors=True)
    out, logs = cfg.folder / "out", cfg.folder / "logs"
    for stale in (
        *out.glob("cycle[0-9]*"), *logs.glob("served-cycle*.jsonl"),
        *logs.glob("production-cycle*.jsonl"),
        out / CYCLES_FILE, out / "served.jsonl", out / "serve.log",
    ):  # fmt: skip
        if stale.is_dir():
            shutil.rmtree(stale)
        else:
            stale.unlink(missing_ok=True)
    return settings


@dataclass
class _Loop:
    """What carries from one cycle to the next."""

    cfg: CyclesConfig
    server: ServedModel
    st: Stages
    settings: Settings
    base: Path
    #: (model id, adapter dir; None: the base model) of the model serving
    champion: tuple[str, Path | None]
    #: graded rollouts no release has taken yet, by rollout id
    pool: dict[str, ScoredRollout] = field(default_factory=dict)
    #: conversations served so far, by the model that produced them
    served: Counter[str] = field(default_factory=Counter)


def _cycle(loop: _Loop, cycle: int) -> CycleRecord:
    from rlstream.training import TrainConfig, TrainingError, train

    cfg, server, st, base, pool = loop.cfg, loop.server, loop.st, loop.base, loop.pool
    champion = loop.champion
    out = cfg.folder / "out" / f"cycle{cycle}"
    out.mkdir(parents=True, exist_ok=True)
    secs: dict[str, float] = {}
    t = time.perf_counter()
    st.start("serve", cfg.users_per_cycle * cfg.samples_per_user)
    labels = _serve_users(server, cfg, cycle, st)
    logs = cfg.folder / "logs" / f"served-cycle{cycle}.jsonl"
    n = _labelled(server.log_jsonl, labels, logs)
    secs["serve"] = round(time.perf_counter() - t, 1)
    st.done("serve", secs["serve"], f"{n} conversations served by {champion[0][:16]}")
    t = time.perf_counter()
    st.start("ingest, grade, curate")
    served, _ = _grade(_ingest(logs, st)[0], st)
    production = _production_slice(cfg, cycle)
    fresh, _ = _grade(_ingest(production, st)[0], st)
    for r in (*fresh, *served):
        pool[r.rollout_id] = r
    scored = sorted(pool.values(), key=lambda r: r.rollout_id)
    write_models(out / "scored.jsonl", scored)
    result = curate(scored, CurateOptions(heldout_share=cfg.heldout_share))
    manifest = write_dataset(result, out / "dataset")
    for entry in manifest.lineage:  # released once: they leave the pending pool
        for rid in entry.rollout_ids:
            pool.pop(rid, None)
    secs["ingest+grade+curate"] = round(time.perf_counter() - t, 1)
    passed = sum(r.passed for r in served)
    st.done(
        "ingest, grade, curate",
        secs["ingest+grade+curate"],
        f"{passed}/{len(served)} served pass, {len(fresh)} production logs; release "
        f"{manifest.dataset_id[:12]}: SFT rows by policy {manifest.policy_rows.get('sft.jsonl')}",
    )
    t = time.perf_counter()
    st.start("train", cfg.train_steps)
    run = train(
        out / "dataset",
        output_dir=out / "run",
        config=TrainConfig(
            method="sft", max_steps=cfg.train_steps, learning_rate=cfg.learning_rate,
            batch_size=cfg.batch_size, max_length=256, seed=cfg.seed + cycle, device="cpu",
        ),
        base_model=base,
        progress=lambda *_: st.advance(1),
    )  # fmt: skip
    if run.status != "succeeded" or run.adapter_dir is None:
        raise TrainingError(f"cycle {cycle}: training failed: {run.reason}")
    secs["train"] = round(time.perf_counter() - t, 1)
    st.done("train", secs["train"], f"LoRA SFT, {run.steps} steps")
    t = time.perf_counter()
    request = EvalRequest(
        baseline=ModelRef.of(base, champion[1], "champion"),
        candidate=ModelRef.of(base, run.adapter_dir, "candidate"),
        heldout=out / "dataset" / "heldout.jsonl",
        reward_spec=REWARD, k=1, greedy=True, max_new_tokens=cfg.max_new_tokens,
        seed=cfg.seed, batch_size=cfg.eval_batch_size, max_prompts=cfg.eval_prompts,
        device="cpu", sampler="hf", training_dataset=out / "dataset",
    )  # fmt: skip
    st.start("evaluate")
    report = run_evaluation(request)
    decision = decide(report, cfg.gate)
    data = write_eval_report(report, decision, out, gate=cfg.gate)
    secs["evaluate+gate"] = round(time.perf_counter() - t, 1)
    st.done("evaluate", secs["evaluate+gate"], f"{decision.decision}: {decision.reasons[0]}")
    model_id, promoted = _register(loop, out, data, decision, run, manifest.dataset_id, served)
    swap = None
    after = champion
    if promoted:
        t = time.perf_counter()
        swap = server.swap(Path(run.adapter_dir), model_id, None)
        secs["swap"] = round(time.perf_counter() - t, 1)
        after = (model_id, Path(run.adapter_dir))
    loop.served.update(str(r.transcript.model) for r in served)
    loop.champion = after
    d = report.deltas.get(cfg.gate.metric, report.delta)
    rec = CycleRecord(
        cycle=cycle,
        serving_before=champion[0],
        serving_after=after[0],
        conversations=len(served),
        served_pass_rate=round(sum(r.passed for r in served) / max(len(served), 1), 4),
        conversations_per_model=dict(sorted(loop.served.items())),
        dataset_rows=manifest.policy_rows,
        metric=d.metric,
        baseline=_metric(report.baseline, d.metric),
        candidate=_metric(report.candidate, d.metric),
        delta=d.mean,
        ci_low=d.ci_low,
        ci_high=d.ci_high,
        n_prompts=d.n_prompts,
        decision=decision.decision,
        reason=decision.reasons[0],
        candidate_model=model_id,
        swap=swap,
        seconds=secs,
    )
    return rec


def _production_slice(cfg: CyclesConfig, cycle: int) -> Path:
    """The production logs that arrived during ``cycle`` (its tasks, every rollout)."""
    per = cfg.n_tasks * cfg.rollouts_per_task
    records = order_records(cfg.seed, cfg.n_tasks * cfg.cycles, cfg.rollouts_per_task)
    path = cfg.folder / "logs" / f"production-cycle{cycle}.jsonl"
    path.parent.mkdir(parents=True, exist_ok=True)
    chunk = records[(cycle - 1) * per : cycle * per]
    path.write_bytes(b"".join(orjson.dumps(r) + b"\n" for r in chunk))
    return path


def _metric(summary: Any, metric: str) -> float:
    if metric == "pass_at_1":
        return float(summary.pass_at_1)
    if metric == "mean_reward":
        return float(summary.mean_reward)
    return float(summary.pass_at_k.get(int(metric.rsplit("_", 1)[-1]), summary.pass_at_1))


def _register(
    loop: _Loop,
    out: Path,
    data: dict[str, Any],
    decision: Any,
    run: Any,
    dataset_id: str,
    served: list[ScoredRollout],
) -> tuple[str, bool]:
    """Record run, evaluation and candidate in the registry (embedded Postgres) and apply the
    gate's decision against the champion it was compared with."""
    from rlstream.pipeline.registry_step import promote_and_trace
    from rlstream.registry import CandidateRun, Verdict

    cfg, base, champion = loop.cfg, loop.base, loop.champion
    write_models(out / "served_scored.jsonl", served)
    promotion = asyncio.run(
        promote_and_trace(
            loop.settings,
            dataset_dir=out / "dataset",
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
            baseline_model=champion[0],
            verdict=Verdict.from_report(
                data, decision.decision, decision.reasons, str(out / "report.json")
            ),
            heldout_share=cfg.heldout_share,
            baseline_champion=None if champion[1] is None else champion[0],
            served=served,
        )
    )
    return promotion.model_id, promotion.promoted
