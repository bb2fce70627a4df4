"""Builders for evaluation tests: synthetic per-prompt results and a scripted sampler."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from pathlib import Path

from rlstream.evaluation import (
    Decoding,
    EvaluationReport,
    ModelRef,
    PromptResult,
    Sample,
)
from rlstream.evaluation.models import Delta
from rlstream.evaluation.run import summarise
from rlstream.evaluation.sampler import Advance, Generation, Messages
from rlstream.evaluation.stats import paired_delta

BASE = ModelRef(base="base", label="baseline")
CAND = ModelRef(base="base", adapter_dir="adapter", label="candidate")


def sample(
    passed: bool, *, tokens: int = 20, tool_error: bool = False, attempted: bool = True
) -> Sample:
    return Sample(
        text="x",
        tokens=tokens,
        finished=True,
        score=1.0 if passed else 0.0,
        passed=passed,
        tool_error=tool_error,
        attempted_call=attempted,
    )


def report_from(
    base: Sequence[Sequence[Sample]], cand: Sequence[Sequence[Sample]], k: int = 1
) -> EvaluationReport:
    prompts = tuple(
        PromptResult(task_key=f"t{i}", baseline=tuple(b), candidate=tuple(c))
        for i, (b, c) in enumerate(zip(base, cand, strict=True))
    )
    deltas: dict[str, Delta] = {m: paired_delta(prompts, m) for m in ("pass_at_1", "mean_reward")}
    return EvaluationReport(
        report_id="report-test",
        heldout={"path": "h.jsonl", "sha256": "0" * 64, "prompts": len(prompts)},
        reward_spec="tool_calling",
        decoding=Decoding(k=k, greedy=k == 1),
        baseline=summarise(BASE, [p.baseline for p in prompts], 1.0),
        candidate=summarise(CAND, [p.candidate for p in prompts], 1.0),
        delta=deltas["pass_at_1"],
        deltas=deltas,
        leakage={"task_keys": len(prompts), "sources": []},
        prompts=prompts,
    )


class ScriptedSampler:
    """Answers every prompt with ``answer(user_message)`` (no model)."""

    name = "scripted"

    def __init__(self, answer: Callable[[str], str]) -> None:
        self.answer = answer

    def generate(
        self, prompts: Sequence[Messages], decoding: Decoding, advance: Advance | None = None
    ) -> list[list[Generation]]:
        out = [
            [Generation(self.answer(p[-1]["content"]), 12, True)] * decoding.samples
            for p in prompts
        ]
        if advance is not None:
            advance(len(prompts))
        return out

    def close(self) -> None:
        pass


def orders_dataset(tmp: Path, n_tasks: int = 120, share: float = 0.25) -> Path:
    """The demo's sample logs -> ingest -> grade -> curate into ``tmp/dataset``."""
    from rlstream.curation import CurateOptions, curate, write_dataset
    from rlstream.grading import RewardSpec, grade_many
    from rlstream.ingest import IngestOptions, Reject, ingest_paths
    from rlstream.sampledata.orders import write_order_logs

    logs = tmp / "orders.jsonl"
    write_order_logs(logs, seed=3, n_tasks=n_tasks, rollouts=3)
    ts = [t for t in ingest_paths([logs], IngestOptions()) if not isinstance(t, Reject)]
    scored = [r for r in grade_many(ts, RewardSpec.parse("tool_calling")) if hasattr(r, "passed")]
    write_dataset(curate(scored, CurateOptions(heldout_share=share)), tmp / "dataset")
    return tmp / "dataset"
