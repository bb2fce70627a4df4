"""A small hand-made run folder with every artefact the page reads (no training, no model):
the demo's sample logs ingested, graded and curated for real, a scripted training curve, an
evaluation report written by the library's own write_report, and a lineage.json. Hostile
strings (a ``<script>`` in a task key, a reason and a conversation id) ride along."""

from __future__ import annotations

from pathlib import Path

import orjson

from rlstream.curation import CurateOptions, curate, write_dataset
from rlstream.evaluation import (
    Decoding,
    EvaluationReport,
    GateDecision,
    ModelRef,
    PromptResult,
    Sample,
    write_report,
)
from rlstream.evaluation.models import Delta
from rlstream.evaluation.run import summarise
from rlstream.evaluation.stats import paired_delta
from rlstream.grading import RewardSpec, grade_many
from rlstream.ingest import IngestOptions, Reject, ingest_paths
from rlstream.pipeline.batch import write_ingest_json
from rlstream.rollout import ScoredRollout
from rlstream.sampledata.orders import write_order_logs

HOSTILE = "<script>alert(1)</script>"
CONV = f"conv-{HOSTILE}"
REASON = f"a reason with {HOSTILE} inside"


def _sample(passed: bool, score: float) -> Sample:
    return Sample(
        text=HOSTILE, tokens=20, finished=True, score=score, passed=passed, tool_error=False
    )


def evaluation_report(n: int = 40) -> EvaluationReport:
    prompts = tuple(
        PromptResult(
            task_key=f"task-{i}" if i else f"task-{HOSTILE}",
            baseline=(_sample(i % 3 == 0, 0.3 if i % 3 else 1.0),),
            candidate=(_sample(i % 3 != 1, 0.9 if i % 3 != 1 else 0.2),),
        )
        for i in range(n)
    )
    deltas: dict[str, Delta] = {m: paired_delta(prompts, m) for m in ("pass_at_1", "mean_reward")}
    base = ModelRef(base="base", label="baseline")
    cand = ModelRef(base="base", adapter_dir="run/adapter", label="candidate")
    return EvaluationReport(
        report_id="report-fixture",
        heldout={"path": "dataset/heldout.jsonl", "sha256": "0" * 64, "prompts": n},
        reward_spec="tool_calling",
        decoding=Decoding(k=1, greedy=True),
        baseline=summarise(base, [p.baseline for p in prompts], 1.0),
        candidate=summarise(cand, [p.candidate for p in prompts], 1.0),
        delta=deltas["pass_at_1"],
        deltas=deltas,
        leakage={"task_keys": n, "sources": []},
        prompts=prompts,
    )


def _lineage(dataset_id: str) -> dict[str, object]:
    convs = [
        {"conversation_id": CONV, "kind": "file", "file": "logs/orders.jsonl", "line": 1},
        {"conversation_id": "conv-2", "kind": "file", "file": "logs/orders.jsonl", "line": 2},
    ]

    def node(
        kind: str, ident: str, kids: list[dict[str, object]], **details: object
    ) -> dict[str, object]:
        return {"kind": kind, "id": ident, "details": details, "children": kids}

    leaves = [
        node("conversation", str(c["conversation_id"]), [], source=f"logs/orders.jsonl:{c['line']}")
        for c in convs
    ]
    rollouts = [
        node("rollout", f"r{i}", [leaf], score=1.0, passed=True) for i, leaf in enumerate(leaves)
    ]
    tree = node("model", "model-abc", [
        node("evaluation", "eval-run-1", [
            node("run", "run-1", [
                node("dataset", dataset_id, [node("group", "g1", rollouts)], rollouts=2),
            ], backend="builtin", method="sft"),
        ], decision="promote"),
    ], agent="orders")  # fmt: skip
    return {
        "root": tree,
        "counts": {
            "model": 1,
            "evaluation": 1,
            "run": 1,
            "dataset": 1,
            "group": 1,
            "rollout": 2,
            "conversation": 2,
        },
        "conversations": convs,
    }


def make_run_folder(root: Path, decision: str = "promote") -> Path:
    """``root/out`` with ingest.json, dataset/, run/, report.json + plots and lineage.json."""
    out = root / "out"
    logs = root / "orders.jsonl"
    write_order_logs(logs, seed=3, n_tasks=60, rollouts=3)
    run = ingest_paths([logs], IngestOptions())
    ts = [t for t in run if not isinstance(t, Reject)]
    out.mkdir(parents=True)
    write_ingest_json(out, [run.summary])
    scored = [
        r for r in grade_many(ts, RewardSpec.parse("tool_calling")) if isinstance(r, ScoredRollout)
    ]
    manifest = write_dataset(curate(scored, CurateOptions(heldout_share=0.2)), out / "dataset")
    (out / "run").mkdir()
    curve = [{"step": float(s), "loss": 2.5 / s, "learning_rate": 5e-4} for s in range(1, 11)]
    (out / "run" / "metrics.json").write_bytes(
        orjson.dumps({"curve": curve, "steps": 10, "tokens_per_s": 812.5})
    )
    (out / "run" / "run.json").write_bytes(orjson.dumps({
        "run_id": "run-1", "status": "succeeded", "reason": None, "method": "sft",
        "backend": {"name": "builtin", "version": "1"}, "steps": 10, "metrics": {"final_loss": 0.25},
    }))  # fmt: skip
    gate = GateDecision(decision=decision, reasons=(REASON, "no guard regressed"))
    write_report(evaluation_report(), gate, out, model_id="model-abc")
    (out / "lineage.json").write_bytes(orjson.dumps(_lineage(manifest.dataset_id)))
    return out
