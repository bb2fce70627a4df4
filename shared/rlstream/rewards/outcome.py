"""outcome: the business outcome the agent logged, mapped to [0, 1].

Signals read from ``transcript.outcome`` (or, when it has none, a ``context.label`` mapping):
``resolved`` (bool; "yes"/"true"/1 accepted) -> 0 or 1; ``csat`` on a 1-5 scale (configurable)
-> (csat - min) / (max - min); a numeric task reward (``task_reward``/``reward``/``score``)
rescaled from ``reward_range``. The score is the mean of the signals present. When none of
those keys is there, ``value`` is read: what ingest stores for a field mapped with
``--outcome-field`` whatever its name (booleans, numbers on ``reward_range``, pass/fail words
or strings mapped by ``--outcome-values``). With no signal the reward raises
:class:`MissingContextError`.
"""

from __future__ import annotations

from typing import Any, ClassVar

from rlstream.errors import ConfigError, MissingContextError, RewardError
from rlstream.rewards._common import reject_unknown, threshold_option
from rlstream.rewards.base import RewardContext, RewardResult, clamp, make_result
from rlstream.transcript import Transcript

_TRUE = {"true", "yes", "y", "1", "resolved", "success", "succeeded", "pass", "passed"}
_FALSE = {"false", "no", "n", "0", "unresolved", "failure", "failed", "fail"}


class OutcomeReward:
    """Maps logged outcomes (resolved, CSAT, numeric task reward) onto [0, 1]."""

    name: ClassVar[str] = "outcome"
    version: ClassVar[str] = "1.1.0"
    endorsed_features: ClassVar[tuple[str, ...]] = ()
    _OPTIONS: ClassVar[tuple[str, ...]] = (
        "threshold",
        "resolved_keys",
        "csat_keys",
        "csat_range",
        "reward_keys",
        "reward_range",
    )

    def __init__(
        self,
        threshold: float | None = None,
        resolved_keys: tuple[str, ...] | list[str] = ("resolved", "success", "task_success"),
        csat_keys: tuple[str, ...] | list[str] = ("csat", "satisfaction", "rating"),
        csat_range: tuple[float, float] | list[float] = (1.0, 5.0),
        reward_keys: tuple[str, ...] | list[str] = ("task_reward", "reward", "score"),
        reward_range: tuple[float, float] | list[float] = (0.0, 1.0),
        **options: Any,
    ) -> None:
        reject_unknown(self.name, options, self._OPTIONS)
        self.threshold = threshold_option(threshold, 0.5)
        self.resolved_keys = tuple(resolved_keys)
        self.csat_keys = tuple(csat_keys)
        self.reward_keys = tuple(reward_keys)
        self.csat_range = _range("csat_range", csat_range)
        self.reward_range = _range("reward_range", reward_range)

    def _components(self, src: Any) -> dict[str, float]:
        components: dict[str, float] = {}
        if not isinstance(src, dict):
            return components
        resolved = _first(src, self.resolved_keys)
        if resolved is not None:
            components["resolved"] = _boolish(resolved)
        csat = _first(src, self.csat_keys)
        if csat is not None:
            components["csat"] = _scaled(csat, self.csat_range, "csat")
        task = _first(src, self.reward_keys)
        if task is not None:
            components["task_reward"] = _scaled(task, self.reward_range, "task reward")
        value = src.get("value")
        if not components and value is not None:  # a field mapped by --outcome-field
            components["value"] = _value(value, self.reward_range)
        return components

    def _signals(self, transcript: Transcript, context: RewardContext) -> dict[str, float]:
        components = self._components(transcript.outcome)
        if not components and isinstance(context.label, dict):
            components = self._components(context.label)
        if not components:
            raise MissingContextError(
                "outcome needs a logged outcome (resolved, csat, a task reward, or the field "
                "named by --outcome-field at ingest) in transcript.outcome"
            )
        return components

    def passes(self, transcript: Transcript, context: RewardContext) -> bool:
        """``self(transcript, context).passed`` without building the result (the grader
        asks this of every rollout when it picks a group's passing peers)."""
        components = self._signals(transcript, context)
        return clamp(sum(components.values()) / len(components)) >= self.threshold

    def __call__(self, transcript: Transcript, context: RewardContext) -> RewardResult:
        components = self._signals(transcript, context)
        reasons: list[str] = []
        score = sum(components.values()) / len(components)
        if score < self.threshold:
            reasons.append(
                "logged outcome below threshold: "
                + ", ".join(f"{k}={v:.2f}" for k, v in components.items())
            )
        n_turns = 0
        for m in transcript.messages:
            if m.role == "assistant":
                n_turns += 1
        # a conversation-level outcome says nothing about which turn earned it: uniform credit
        return make_result(
            reward=self.name,
            version=self.version,
            score=score,
            threshold=self.threshold,
            components=components,
            reasons=reasons,
            turn_scores=[clamp(score)] * n_turns,
        )


def _range(name: str, value: Any) -> tuple[float, float]:
    try:
        lo, hi = (float(x) for x in value)
    except (TypeError, ValueError) as exc:
        raise ConfigError(f"outcome: {name} must be [low, high]") from exc
    if not hi > lo:
        raise ConfigError(f"outcome: {name} needs high > low, got {value!r}")
    return lo, hi


def _first(src: dict[str, Any], keys: tuple[str, ...]) -> Any:
    for k in keys:
        v = src.get(k)
        if v is not None:
            return v
    return None


def _boolish(value: Any) -> float:
    if isinstance(value, bool):
        return 1.0 if value else 0.0
    if isinstance(value, int | float):
        return 1.0 if value > 0 else 0.0
    if isinstance(value, str):
        low = value.strip().lower()
        if low in _TRUE:
            return 1.0
        if low in _FALSE:
            return 0.0
    raise RewardError(f"outcome: cannot read {value!r} as resolved/unresolved")


def _value(value: Any, rng: tuple[float, float]) -> float:
    """A mapped outcome: a boolean, a number on ``reward_range`` or a pass/fail word."""
    if isinstance(value, bool):
        return 1.0 if value else 0.0
    if isinstance(value, int | float):
        return _scaled(value, rng, "outcome value")
    if isinstance(value, str):
        try:
            return _boolish(value)
        except RewardError:
            raise RewardError(
                f"outcome: cannot read {value!r} as an outcome; map the field's strings "
                "with --outcome-values (e.g. resolved=1,escalated=0)"
            ) from None
    raise RewardError(f"outcome: cannot read {value!r} as an outcome")


def _scaled(value: Any, rng: tuple[float, float], what: str) -> float:
    if isinstance(value, bool):
        raise RewardError(f"outcome: {what} {value!r} is not a number")
    try:
        x = float(value)
    except (TypeError, ValueError) as exc:
        raise RewardError(f"outcome: {what} {value!r} is not a number") from exc
    lo, hi = rng
    return clamp((x - lo) / (hi - lo))
