"""What an evaluation is asked, what it measured and what the gate decided: frozen models.

Everything here is JSON-serialisable and carries no timestamps, so the same request on the
same held-out file gives the same report (timings aside, which live in ``timings``).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, JsonValue, model_validator

Metric = Literal["pass_at_1", "mean_reward"]
#: what the gate can say: a proven gain, a failed check, or too few prompts to tell
Decision = Literal["promote", "reject", "insufficient"]


class _Frozen(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")


class ModelRef(_Frozen):
    """A model to sample: a base (local dir or id) plus an optional peft adapter."""

    base: str
    adapter_dir: str | None = None
    label: str

    @classmethod
    def of(cls, base: str | Path, adapter_dir: str | Path | None, label: str) -> ModelRef:
        return cls(
            base=str(base),
            adapter_dir=None if adapter_dir is None else str(adapter_dir),
            label=label,
        )

    def describe(self) -> str:
        return self.base if self.adapter_dir is None else f"{self.base} + {self.adapter_dir}"


class Decoding(_Frozen):
    """The sampling settings, identical for baseline and candidate."""

    k: int = Field(default=4, ge=1, le=64, description="samples per prompt (1 when greedy)")
    greedy: bool = False
    temperature: float = Field(default=0.7, gt=0.0, le=2.0)
    top_p: float = Field(default=1.0, gt=0.0, le=1.0)
    max_new_tokens: int = Field(default=64, ge=1, le=4096)
    seed: int = 0
    #: prompts decoded together; wide batches pay on CPU, where a decode step's fixed
    #: cost dominates (bench/eval_throughput.py); capped by ``batch_tokens``
    batch_size: int = Field(default=128, ge=1)
    #: KV-cache budget per batch in tokens (rows x (longest prompt + max_new_tokens) x
    #: samples), so long agent prompts get narrower batches instead of exhausting memory
    batch_tokens: int = Field(default=32_768, ge=1)

    @property
    def samples(self) -> int:
        return 1 if self.greedy else self.k


class EnvironmentSpec(_Frozen):
    """The environment form: each held-out task played as whole episodes in the
    environment registered as ``name`` (``replay``, ``python`` or a plugin's), with its
    keyword ``options``; see :mod:`rlstream.evaluation.episodes`."""

    name: str = Field(min_length=1)
    options: dict[str, JsonValue] = Field(default_factory=dict)
    max_turns: int = Field(default=8, ge=1, le=64)
    timeout_s: float = Field(default=30.0, gt=0.0)


class EvalRequest(_Frozen):
    """Baseline and candidate, the held-out prompts and how to sample and grade them.

    Decoding settings are flat (``k``, ``greedy``, ``temperature``, ``max_new_tokens``,
    ``seed``) and identical for both models (:attr:`decoding`). ``training_dataset`` is the
    candidate's training dataset folder: any held-out task key found in its manifest refuses
    the evaluation, as does any key in ``trained_task_keys`` (what Postgres lineage says the
    candidate saw; see :func:`rlstream.evaluation.released_task_keys`).
    """

    baseline: ModelRef
    candidate: ModelRef
    heldout: Path
    reward_spec: str
    k: int = Field(default=4, ge=1, le=64)
    greedy: bool = False
    temperature: float = Field(default=0.7, gt=0.0, le=2.0)
    top_p: float = Field(default=1.0, gt=0.0, le=1.0)
    max_new_tokens: int = Field(default=64, ge=1, le=4096)
    seed: int = 0
    batch_size: int = Field(default=128, ge=1)
    batch_tokens: int = Field(default=32_768, ge=1)
    max_prompts: int | None = Field(default=None, ge=1)
    device: str = "auto"
    sampler: Literal["auto", "hf", "vllm"] = "auto"
    #: reuse the prompts' common prefix (system prompt) across prompts: how to sample, not
    #: what (the same generations), so it is left out of the report id
    prefix_cache: bool = True
    training_dataset: Path | None = None
    trained_task_keys: tuple[str, ...] = ()
    #: None: grade one generated turn per prompt; else play each task in this environment
    environment: EnvironmentSpec | None = None
    #: the same settings as one object; give either this or the flat fields
    decoding: Decoding = Field(default_factory=Decoding)

    @model_validator(mode="before")
    @classmethod
    def _one_decoding(cls, data: Any) -> Any:
        """Flat fields and ``decoding`` always agree: whichever was given fills the other."""
        if not isinstance(data, dict):
            return data
        data = dict(data)
        flat = {k: data[k] for k in _DECODING_FIELDS if k in data}
        given = data.get("decoding")
        if given is None:
            data["decoding"] = Decoding(**flat)
            return data
        dec = given if isinstance(given, Decoding) else Decoding.model_validate(given)
        clash = {k for k, v in flat.items() if getattr(dec, k) != v}
        if clash:
            raise ValueError(f"decoding and the flat fields disagree on {sorted(clash)}")
        data.update({k: getattr(dec, k) for k in _DECODING_FIELDS})
        data["decoding"] = dec
        return data


_DECODING_FIELDS = (
    "k", "greedy", "temperature", "top_p", "max_new_tokens", "seed", "batch_size", "batch_tokens",
)  # fmt: skip


class Sample(_Frozen):
    """One graded generation."""

    text: str
    tokens: int
    finished: bool
    score: float
    passed: bool
    tool_error: bool
    #: the sample tried a tool call (a fenced JSON block or a native call)
    attempted_call: bool = False
    safety: float | None = None
    graded: bool = True
    reason: str | None = None


class PromptResult(_Frozen):
    """Both models on one held-out prompt: their samples and the paired differences."""

    task_key: str
    baseline: tuple[Sample, ...]
    candidate: tuple[Sample, ...]

    @staticmethod
    def rate(samples: tuple[Sample, ...]) -> float:
        return sum(s.passed for s in samples) / len(samples)

    @staticmethod
    def mean(samples: tuple[Sample, ...]) -> float:
        return sum(s.score for s in samples) / len(samples)

    def diff(self, metric: Metric) -> float:
        f = self.rate if metric == "pass_at_1" else self.mean
        return f(self.candidate) - f(self.baseline)


class ModelSummary(_Frozen):
    """One model's aggregate figures over every held-out prompt."""

    label: str
    model: ModelRef
    samples_per_prompt: int
    pass_at_1: float
    pass_at_k: dict[int, float]
    mean_reward: float
    #: guard metrics: mean response tokens; tool-call errors per sample that tried a call
    #: (absent when no sample tried one); safety (when the reward grades it)
    guards: dict[str, float]
    ungraded: int = 0
    seconds: float = 0.0


class Delta(_Frozen):
    """Candidate minus baseline on one metric, paired over prompts.

    ``ci_low``/``ci_high`` are a bootstrap CI for display (``method``); the gate decides on
    ``p_value``, the one-sided p of "gain <= ``margin``" from the small-sample-valid ``test``.
    """

    metric: Metric
    mean: float
    ci_low: float
    ci_high: float
    confidence: float
    n_prompts: int
    wins: int
    losses: int
    ties: int
    method: str
    #: the gate's test (exact McNemar / paired sign-flip permutation) and its one-sided p
    test: str = ""
    p_value: float | None = None
    margin: float = 0.0


class EvaluationReport(_Frozen):
    schema_version: Literal[1] = 1
    #: the report's content id (request + held-out file digest), not the registry's
    #: evaluation id (``eval-<run_id>``, rlstream.registry.evaluation_id_for)
    report_id: str
    heldout: dict[str, JsonValue]
    reward_spec: str
    decoding: Decoding
    baseline: ModelSummary
    candidate: ModelSummary
    #: the paired pass_at_1 delta at the evaluation's confidence (95% unless asked);
    #: ``deltas`` has it per metric. report.json's ``delta`` is the gate metric's instead.
    delta: Delta
    deltas: dict[str, Delta]
    leakage: dict[str, JsonValue]
    prompts: tuple[PromptResult, ...]
    timings: dict[str, float] = Field(default_factory=dict)


class GuardRule(_Frozen):
    """How far a guard metric may move the wrong way before the gate rejects."""

    worse: Literal["higher", "lower"]
    tolerance: float = Field(ge=0.0)
    relative: bool = False

    def regressed(self, baseline: float, candidate: float) -> tuple[bool, float]:
        """(beyond tolerance?, how much worse: absolute, or relative to the baseline)."""
        change = candidate - baseline if self.worse == "higher" else baseline - candidate
        if self.relative:
            change = change / baseline if baseline > 0 else (0.0 if change <= 0 else float("inf"))
        return change > self.tolerance, change


def default_guards() -> dict[str, GuardRule]:
    return {
        "tool_error_rate": GuardRule(worse="higher", tolerance=0.05),
        "response_tokens": GuardRule(worse="higher", tolerance=0.5, relative=True),
        "safety": GuardRule(worse="lower", tolerance=0.02),
    }


class GateConfig(_Frozen):
    """Promote only when a paired one-sided test at ``confidence`` rejects "``metric``'s gain
    <= ``min_effect``" over at least ``min_prompts`` held-out prompts, and every guard's
    one-sided bound on its regression stays within tolerance (docs/registry.md, "The gate")."""

    metric: Metric = "pass_at_1"
    min_effect: float = Field(default=0.0, gt=-1.0, lt=1.0)
    confidence: float = Field(default=0.95, gt=0.5, lt=1.0)
    #: below this many held-out prompts the decision is ``insufficient``, never ``promote``
    min_prompts: int = Field(default=30, ge=1)
    guards: dict[str, GuardRule] = Field(default_factory=default_guards)
    #: an unavailable judge fails the gate: samples that could not be graded, at most
    max_ungraded_share: float = Field(default=0.0, ge=0.0, le=1.0)


class GateDecision(_Frozen):
    """``decision`` with its reasons, the first being the gain test's (or why none ran)."""

    decision: Decision
    reasons: tuple[str, ...]

    @property
    def promote(self) -> bool:
        return self.decision == "promote"
