"""The reward contract: ``(transcript, context) -> RewardResult``.

Rewards are pure, deterministic and versioned. A reward that needs context it did not get
raises :class:`rlstream.errors.MissingContextError`; it never returns a silent default.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Any, ClassVar, Protocol, TypeGuard, runtime_checkable

from pydantic import BaseModel, ConfigDict, Field, JsonValue, field_validator

from rlstream.fastmodel import trusted
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


def clamp(x: float) -> float:
    """``x`` limited to [0, 1] (NaN stays NaN: :func:`make_result` refuses it)."""
    return 0.0 if x < 0.0 else 1.0 if x > 1.0 else x


def make_result(
    *,
    reward: str,
    version: str,
    score: float,
    threshold: float,
    components: Mapping[str, float],
    reasons: Sequence[str] = (),
    turn_scores: Sequence[float] = (),
    features: dict[str, float] | None = None,
) -> RewardResult:
    """The one way a reward builds its :class:`RewardResult` (every shipped reward uses it).

    ``score``, components and turn scores are clamped to [0, 1] (a plugin reward's
    out-of-range value is never stored as-is) and a NaN score raises; ``passed`` is
    ``score >= threshold``. Built without re-validating each field
    (:func:`rlstream.fastmodel.trusted`): the grading hot path.
    """
    s = clamp(score)
    if s != s:  # NaN never leaves a reward
        raise ValueError(f"{reward}: score is NaN")
    return trusted(
        RewardResult,
        {
            "reward": reward,
            "version": version,
            "score": s,
            "passed": s >= threshold,
            "threshold": threshold,
            "components": {k: clamp(v) for k, v in components.items()},
            "reasons": tuple(reasons),
            "turn_scores": tuple([clamp(t) for t in turn_scores]),
            "features": {} if features is None else features,
        },
    )


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


#: what :meth:`GroupScoringReward.group_scorer` returns: ``(transcript, context) -> result``
GroupScorer = Callable[[Transcript, RewardContext], RewardResult]


@runtime_checkable
class GroupAwareReward(Reward, Protocol):
    """A reward judged against its peers (same task key): with ``uses_group = True``,
    ``grade_many`` runs it in a second pass with ``context.group`` = the other rollouts of
    the group that passed every other reward. Find one with :func:`is_group_aware`."""

    uses_group: ClassVar[bool]


@runtime_checkable
class GroupScoringReward(GroupAwareReward, Protocol):
    """A group-aware reward that prepares once per group (e.g. counts the peers' votes):
    ``grade_many`` calls ``group_scorer(peers)`` once per task key with all passing peers, and
    ``scorer(t, ctx)`` must equal ``reward(t, ctx)`` with ``ctx.group`` = those peers minus
    ``t`` (the scorer leaves the rollout out itself)."""

    def group_scorer(self, peers: Sequence[Transcript]) -> GroupScorer: ...


def is_group_aware(reward: Reward) -> TypeGuard[GroupAwareReward]:
    """Does ``grade_many`` give ``reward`` its group (second pass)?"""
    return isinstance(reward, GroupAwareReward) and bool(reward.uses_group)


def group_scorer_factory(reward: Reward) -> Callable[[Sequence[Transcript]], GroupScorer] | None:
    """``reward.group_scorer`` for a group-aware reward that offers one, else None."""
    if is_group_aware(reward) and isinstance(reward, GroupScoringReward):
        return reward.group_scorer
    return None
