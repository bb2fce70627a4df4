"""The evaluation step behind the evaluator: a job description and the function that runs it.

The default runs ``rlstream.evaluation`` (held-out prompts, baseline vs candidate, paired
bootstrap, gate); ``RLSTREAM_EVALUATE_FUNCTION=module:function`` plugs in another one.
Either way it is blocking, heavy code: the handler runs it in a worker thread.
"""

from __future__ import annotations

import importlib
from collections.abc import Callable
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict

from rlstream.errors import ConfigError, InputError
from rlstream.registry import Verdict


class EvalJob(BaseModel):
    """Everything one evaluation needs; baseline is the champion's adapter, else none."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    run_id: str
    agent: str
    reward_spec: str
    dataset_id: str
    heldout: Path | None
    base_model: str
    baseline_adapter: Path | None
    baseline_label: str
    candidate_adapter: Path
    report_dir: Path
    k: int
    max_new_tokens: int
    seed: int
    metric: str
    min_effect: float


Evaluate = Callable[[EvalJob], Verdict]


def load_evaluate(path: str | None) -> Evaluate:
    if not path:
        return evaluate_with_library
    module, _, name = path.partition(":")
    try:
        fn = getattr(importlib.import_module(module), name)
    except (ImportError, AttributeError) as exc:
        raise ConfigError(f"RLSTREAM_EVALUATE_FUNCTION={path!r} cannot be imported: {exc}") from exc
    return fn  # type: ignore[no-any-return]


def _pick(data: Any, *path: str) -> float | None:
    for key in path:
        if not isinstance(data, dict) or key not in data:
            return None
        data = data[key]
    return float(data) if isinstance(data, int | float) else None


def evaluate_with_library(job: EvalJob) -> Verdict:
    """Run eval-gate's ``rlstream.evaluation`` and translate its decision into a Verdict."""
    try:
        evaluation: Any = importlib.import_module("rlstream.evaluation")
    except ImportError as exc:
        raise ConfigError("rlstream.evaluation is not installed in this image") from exc
    if job.heldout is None or not job.heldout.exists():
        raise InputError(f"run {job.run_id}: dataset {job.dataset_id[:12]} has no heldout.jsonl")
    request = evaluation.EvalRequest(
        baseline=evaluation.ModelRef(
            base=job.base_model, adapter_dir=job.baseline_adapter, label=job.baseline_label
        ),
        candidate=evaluation.ModelRef(
            base=job.base_model, adapter_dir=job.candidate_adapter, label="candidate"
        ),
        heldout=job.heldout,
        reward_spec=job.reward_spec,
        k=job.k,
        max_new_tokens=job.max_new_tokens,
        seed=job.seed,
    )
    report = evaluation.run_evaluation(request)
    decision = evaluation.decide(
        report, evaluation.GateConfig(metric=job.metric, min_effect=job.min_effect)
    )
    evaluation.write_report(report, decision, job.report_dir)
    data = report.model_dump(mode="json")
    return Verdict(
        decision="promote" if decision.promote else "reject",
        reasons=tuple(decision.reasons),
        metric=job.metric,
        baseline_value=_pick(data, "baseline", job.metric),
        candidate_value=_pick(data, "candidate", job.metric),
        delta_mean=_pick(data, "delta", "mean"),
        delta_ci_low=_pick(data, "delta", "ci_low"),
        delta_ci_high=_pick(data, "delta", "ci_high"),
        report=data,
        report_path=str(job.report_dir / "report.json"),
    )
