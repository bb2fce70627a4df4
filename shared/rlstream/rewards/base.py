"""The reward contract: ``(transcript, context) -> RewardResult``.

Rewards are pure, deterministic and versioned. A reward that needs context it did not get
raises :class:`rlstream.errors.MissingContextError`; it never returns a silent default.
"""

from __future__ import annotations

from typing import Any, ClassVar, Protocol, runtime_checkable

from pydantic import BaseModel, ConfigDict, Field, JsonValue, field_validator

from rlstream.transcript import Transcript


class RewardResult(BaseModel):
    """What a reward says about one rollout."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    reward: str
    version: str
    score: float = Field(ge=0.0, le=1.0)
    passed: bool
    threshold: float = Field(ge=0.0, le=1.0)
    components: dict[str, float] = Field(default_factory=dict)
    reasons: tuple[str, ...] = ()
    turn_scores: tuple[float, ...] = ()
    features: dict[str, float] = Field(default_factory=dict)

    @field_validator("score")
    @classmethod
    def _finite(cls, v: float) -> float:
        if v != v:  # NaN
            raise ValueError("score is NaN")
        return v


class RewardContext(BaseModel):
    """Context a reward may need beyond the transcript.

    ``label`` overrides the transcript's own label; ``reference`` is e.g. expected tool
    calls; ``group`` holds the other rollouts of the same task key (for rewards that derive
    a reference from passing peers); ``options`` carries per-agent configuration.
    """

    model_config = ConfigDict(frozen=True, extra="forbid", arbitrary_types_allowed=True)

    label: JsonValue = None
    reference: JsonValue = None
    group: tuple[Transcript, ...] = ()
    options: dict[str, Any] = Field(default_factory=dict)


@runtime_checkable
class Reward(Protocol):
    """A reward function. Implementations are plain classes registered by entry point."""

    name: ClassVar[str]
    version: ClassVar[str]
    threshold: float
    #: surface features this reward is *meant* to track (the hack scan does not alarm on them)
    endorsed_features: ClassVar[tuple[str, ...]]

    def __call__(self, transcript: Transcript, context: RewardContext) -> RewardResult: ...
