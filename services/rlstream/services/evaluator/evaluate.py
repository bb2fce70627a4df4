"""The evaluation step behind the evaluator: a job description and the function that runs it.

The default runs ``rlstream.evaluation`` (held-out prompts, baseline vs candidate, paired
test, gate: promote | reject | insufficient); ``RLSTREAM_EVALUATE_FUNCTION=module:function``
plugs in another one.
Either way it is blocking, heavy code: the handler runs it in a worker thread.
"""

from __future__ import annotations

import importlib
from collections.abc import Callable
from pathlib import Path
from typing import Literal

from pydantic import BaseModel, ConfigDict

from rlstream.errors import ConfigError
from rlstream.evaluation.models import EnvironmentSpec
from rlstream.registry import Verdict


class EvalJob(BaseModel):
    """Everything one evaluation needs; baseline is the champion's adapter, else none."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    run_id: str
    agent: str
    reward_spec: str
    #: the reward YAML that rebuilds a spec id carrying options (training's SpecResolver)
    reward_config: Path | None = None
    dataset_id: str
    #: the agent's accumulated held-out prompts (every release's), written for this run
    heldout: Path | None
    #: the run's training dataset (its lineage is checked against the prompts once more)
    training_dataset: Path | None = None
    trained_task_keys: tuple[str, ...] = ()
    #: held-out task keys the candidate trained on: the run is rejected, not evaluated
    leaked_task_keys: tuple[str, ...] = ()
    base_model: str
    baseline_adapter: Path | None
    baseline_label: str
    #: the champion the candidate is compared with (None: no champion, the base model);
    #: its promotion compares-and-sets this champion
    baseline_model_id: str | None = None
    candidate_adapter: Path
    report_dir: Path
    k: int
    greedy: bool = False
    max_prompts: int | None = None
    max_new_tokens: int
    seed: int
    metric: Literal["pass_at_1", "mean_reward"]
    min_effect: float
    min_prompts: int = 30
    #: None: the next-action (or first-turn) form; else whole episodes in this environment
    environment: EnvironmentSpec | None = None


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


def evaluate_with_library(job: EvalJob) -> Verdict:
    """Run ``rlstream.evaluation`` (refusing held-out prompts in the training dataset) and
    translate its gate decision into a Verdict; report.json/.md and plots go to report_dir."""
    from rlstream.evaluation import (
        Decoding,
        EvalRequest,
        GateConfig,
        ModelRef,
        decide,
        run_evaluation,
        write_report,
    )
    from rlstream.grading import SpecResolver

    if job.heldout is None or not job.heldout.exists():  # recorded: below any minimum
        from rlstream.services.evaluator.heldout import no_heldout_verdict

        return no_heldout_verdict(job.agent)
    request = EvalRequest(
        baseline=ModelRef.of(job.base_model, job.baseline_adapter, job.baseline_label),
        candidate=ModelRef.of(job.base_model, job.candidate_adapter, "candidate"),
        heldout=job.heldout,
        reward_spec=job.reward_spec,
        decoding=Decoding(
            k=job.k, greedy=job.greedy, max_new_tokens=job.max_new_tokens, seed=job.seed
        ),
        max_prompts=job.max_prompts,
        training_dataset=job.training_dataset,
        trained_task_keys=job.trained_task_keys,
        environment=job.environment,
    )
    gate = GateConfig(metric=job.metric, min_effect=job.min_effect, min_prompts=job.min_prompts)
    report = run_evaluation(request, specs=SpecResolver(config_path=job.reward_config))
    decision = decide(report, gate)
    data = write_report(report, decision, job.report_dir, gate=gate)
    return Verdict.from_report(
        data, decision.decision, decision.reasons, str(job.report_dir / "report.json")
    )
