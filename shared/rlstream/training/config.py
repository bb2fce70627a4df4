"""What a training run is asked to do (TrainConfig), plans it (TrainPlan) and returns
(RunResult). Frozen pydantic models: they go into ``run.json`` and events as they are."""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

from rlstream.errors import RlstreamError

MethodChoice = Literal["auto", "sft", "dpo", "grpo", "gspo", "ppo"]
#: gspo = GRPO with sequence-level importance ratios (GSPO); ppo = PPO with a learned critic
#: (GAE advantages). Both train on the GRPO rows (prompts + a reward that grades samples).
TrainMethod = Literal["sft", "dpo", "grpo", "gspo", "ppo"]
#: the methods that sample and grade fresh completions (they read ``grpo.jsonl``)
RL_METHODS: tuple[TrainMethod, ...] = ("grpo", "gspo", "ppo")
RunStatus = Literal["succeeded", "failed"]
#: what a backend reports as it goes: (step, total steps, latest logged metrics)
Progress = Callable[[int, int, Mapping[str, float]], None]


class TrainingError(RlstreamError):
    """A training run could not start or did not finish."""

    code = "training_failed"


class _Frozen(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")


class TrainConfig(_Frozen):
    """Hyper-parameters shared by every backend (each maps them to its own flags).

    Defaults suit LoRA on the small CPU model: float32, short sequences, a few steps.
    """

    method: MethodChoice = "auto"
    max_steps: int = Field(default=20, ge=1)
    #: None = the method's default (METHOD_DEFAULTS: LoRA-sized rates)
    learning_rate: float | None = Field(default=None, gt=0)
    batch_size: int = Field(default=8, ge=1)
    gradient_accumulation_steps: int = Field(default=1, ge=1)
    max_length: int = Field(default=256, ge=16)
    lora_rank: int = Field(default=8, ge=1)
    lora_alpha: int = Field(default=16, ge=1)
    lora_dropout: float = Field(default=0.0, ge=0, lt=1)
    seed: int = 0
    #: GRPO: completions sampled per prompt (a group) and their length cap
    num_generations: int = Field(default=4, ge=2)
    max_new_tokens: int = Field(default=64, ge=1)
    temperature: float = Field(default=1.0, gt=0)
    #: DPO / GRPO KL strength (TRL's ``beta``); None = the method's default
    beta: float | None = Field(default=None, ge=0)
    #: "auto" = cuda when available, else cpu
    device: Literal["auto", "cpu", "cuda"] = "auto"
    log_every: int = Field(default=1, ge=1)
    #: the grader's reward config (rewards.yaml), for GRPO reward specs whose options
    #: (e.g. a policy file) their id cannot carry
    reward_config: str | None = None
    #: extra backend flags, ``--flag=value`` (builtin: TRL config fields; openrlhf: argv)
    backend_args: tuple[str, ...] = ()
    #: GRPO in an environment (a ``rlstream.environments`` name): each grpo.jsonl row is a
    #: task, and a rollout is a whole episode (max_new_tokens per turn); None = single turn
    environment: str | None = None
    #: the environment's options (python: {"domain": "module:attr"}; replay: {"logs": path})
    environment_options: dict[str, Any] = Field(default_factory=dict)
    #: assistant turns per episode, and the deadline of one environment call (seconds)
    max_turns: int = Field(default=8, ge=1)
    env_timeout_s: float = Field(default=30.0, gt=0)
    #: on-policy training: the policy (model id) being trained from; the methods in
    #: ``on_policy_methods`` train only on rows that policy produced (the rows' ``policy``,
    #: the ``model`` ``rlstream serve`` logs). None = every row
    on_policy: str | None = Field(default=None, min_length=1)
    on_policy_methods: tuple[TrainMethod, ...] = RL_METHODS


#: per-method defaults for the fields left None (LoRA rates; TRL's KL strengths)
METHOD_DEFAULTS: dict[str, dict[str, float]] = {
    "sft": {"learning_rate": 5e-4, "beta": 0.0},
    "dpo": {"learning_rate": 5e-5, "beta": 0.1},
    "grpo": {"learning_rate": 5e-5, "beta": 0.0},
    # GSPO (Zheng et al. 2025) trains without a KL term, as GRPO does here
    "gspo": {"learning_rate": 5e-5, "beta": 0.0},
    # PPO: OpenRLHF's default KL coefficient (--algo.kl.init_coef 0.01)
    "ppo": {"learning_rate": 5e-5, "beta": 0.01},
}


def restricts(config: TrainConfig, method: TrainMethod) -> str | None:
    """The policy whose rows ``method`` is restricted to, or None (every row)."""
    return config.on_policy if method in config.on_policy_methods else None


def method_of(config: TrainConfig) -> TrainMethod:
    """The resolved method; backends get a config whose method is never "auto"."""
    if config.method == "auto":
        raise TrainingError("the method must be resolved before a backend sees the config")
    return config.method


def effective(config: TrainConfig) -> tuple[float, float]:
    """(learning_rate, beta) for ``config.method`` (which must be resolved)."""
    d = METHOD_DEFAULTS[method_of(config)]
    lr = config.learning_rate if config.learning_rate is not None else d["learning_rate"]
    beta = config.beta if config.beta is not None else d["beta"]
    return lr, beta


def run_id_for(dataset_sha256: str) -> str:
    """One dataset, one run: the id of every run of a dataset (the curator's, the
    trainer's, ``rlstream train``'s default output folder) and of its runs row."""
    return f"run-{dataset_sha256[:24]}"


class TrainPlan(_Frozen):
    """What a run would do, without doing it (``rlstream train --dry-run``)."""

    backend: str
    method: TrainMethod
    base_model: str
    dataset_dir: str
    output_dir: str
    argv: tuple[str, ...] = ()
    #: files the run would write before starting (name -> content), e.g. a reward file
    files: dict[str, str] = Field(default_factory=dict)
    summary: dict[str, Any] = Field(default_factory=dict)

    @classmethod
    def of(
        cls,
        backend: str,
        method: TrainMethod,
        paths: tuple[Path, str | Path, Path],
        argv: Sequence[str],
        summary: dict[str, Any],
        files: dict[str, str] | None = None,
    ) -> TrainPlan:
        """The plan every backend returns; ``paths`` = (dataset_dir, base_model, output_dir)."""
        dataset_dir, base_model, output_dir = paths
        return cls(
            backend=backend,
            method=method,
            base_model=str(base_model),
            dataset_dir=str(dataset_dir),
            output_dir=str(output_dir),
            argv=tuple(argv),
            files=files or {},
            summary=summary,
        )


class RunResult(_Frozen):
    """How a run ended. ``metrics`` is the summary (the per-step curve is in metrics.json)."""

    run_id: str
    status: RunStatus
    backend: str
    method: TrainMethod
    output_dir: str
    adapter_dir: str | None = None
    steps: int = 0
    reason: str | None = None
    metrics: dict[str, Any] = Field(default_factory=dict)
