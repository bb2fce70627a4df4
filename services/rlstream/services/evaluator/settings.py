"""Evaluator settings (env ``RLSTREAM_*``): the gate, the sampler budget, the reward config,
the deploy target."""

from __future__ import annotations

from pathlib import Path
from typing import Literal

from pydantic import Field, JsonValue

from rlstream.delivery.runtime import ServiceSettings
from rlstream.evaluation.heldout_set import DEFAULT_CAP
from rlstream.evaluation.models import EnvironmentSpec
from rlstream.registry import DeploySettings


class EvaluatorSettings(ServiceSettings, DeploySettings):
    # an evaluation takes minutes and blocks its partition: few records per poll, a long
    # poll interval so the group does not evict a consumer that is busy evaluating
    batch_max_records: int = 10
    max_poll_interval_ms: int = 3_600_000
    eval_runner: Literal["inprocess"] = Field(
        default="inprocess",
        description="where evaluations run; a Kubernetes Job runner is planned (docs/registry.md)",
    )
    evaluate_function: str | None = Field(
        default=None,
        description="module:function(EvalJob) -> Verdict; default: rlstream.evaluation",
    )
    reward_config: Path | None = Field(
        default=None,
        description="the grader's per-agent reward YAML: rebuilds spec ids that carry options "
        "(as training does); a spec it cannot build is recorded as a failed evaluation",
    )
    base_model: str | None = Field(
        default=None, description="base model dir; default: the run's, else the bundled one"
    )
    eval_k: int = Field(default=4, ge=1, description="samples per prompt and model")
    eval_greedy: bool = Field(default=False, description="greedy decoding (then k is 1)")
    eval_max_prompts: int | None = Field(
        default=None, ge=1, description="None: the accumulated held-out set, up to the cap"
    )
    eval_heldout_cap: int = Field(
        default=DEFAULT_CAP,
        ge=1,
        description="most prompts of the agent's accumulated held-out set (every release's) "
        "a run is evaluated on; a deterministic sample by task-key hash beyond it",
    )
    eval_max_new_tokens: int = Field(default=64, ge=1)
    eval_seed: int = 0
    eval_environment: str | None = Field(
        default=None,
        description="play each held-out task as whole episodes in this environment "
        "(replay | python | a plugin's name); None: grade one generated turn per prompt",
    )
    eval_environment_options: dict[str, JsonValue] = Field(
        default_factory=dict,
        description='the environment\'s keyword options as JSON, e.g. {"logs": "/data/a.jsonl"}',
    )
    eval_max_turns: int = Field(default=8, ge=1, le=64, description="most model turns per episode")
    gate_metric: Literal["pass_at_1", "mean_reward"] = "pass_at_1"
    gate_min_effect: float = Field(
        default=0.0, description="the gain the gate's one-sided test must show to be exceeded"
    )
    gate_min_prompts: int = Field(
        default=30, ge=1, description="fewer held-out prompts: decision insufficient"
    )
    reports_dir: Path | None = Field(default=None, description="default: <data_dir>/evaluations")

    def environment(self) -> EnvironmentSpec | None:
        """The environment form's spec, when one is configured."""
        if self.eval_environment is None:
            return None
        return EnvironmentSpec(
            name=self.eval_environment,
            options=self.eval_environment_options,
            max_turns=self.eval_max_turns,
        )

    def reports_path(self) -> Path:
        return self.reports_dir or (self.data_dir / "evaluations")
