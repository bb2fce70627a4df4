"""Helpers every shipped reward shares: option handling, word-boundary matching, results.

Keyword checks compile to one ``\\b``-anchored alternation at import time, so "hate" never
fires inside "whatever" and no reward pays for regex compilation per call.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from typing import Any, TypeVar

from pydantic import BaseModel

from rlstream.errors import ConfigError
from rlstream.rewards.base import RewardResult

M = TypeVar("M", bound=BaseModel)
_SENTENCE = re.compile(r"(?<=[.!?])\s+|\n+")


def words_pattern(words: Iterable[str]) -> re.Pattern[str]:
    """One case-insensitive alternation that only matches whole words/phrases.

    Phrases may contain regex (``can(?:no|')t``); plain words are used as written. The
    ``\\b`` on both ends is the whole point: substring matching is the peers' bug.
    """
    alternation = "|".join(sorted(words, key=len, reverse=True))
    return re.compile(rf"(?<![\w-])(?:{alternation})(?![\w-])", re.IGNORECASE)


def sentences(text: str) -> list[str]:
    """Split text into sentences (good enough for negation scoping)."""
    return [s for s in _SENTENCE.split(text) if s.strip()]


def threshold_option(value: Any, default: float) -> float:
    """Validate a pass threshold from configuration."""
    if value is None:
        return default
    try:
        out = float(value)
    except (TypeError, ValueError) as exc:
        raise ConfigError(f"threshold must be a number, got {value!r}") from exc
    if not 0.0 <= out <= 1.0:
        raise ConfigError(f"threshold must lie in [0, 1], got {out}")
    return out


def reject_unknown(reward: str, options: Mapping[str, Any], known: Iterable[str]) -> None:
    """Unknown options are a configuration mistake, never silently ignored."""
    unknown = sorted(set(options) - set(known))
    if unknown:
        raise ConfigError(f"reward {reward!r}: unknown option(s) {unknown}; known: {sorted(known)}")


def clamp(x: float) -> float:
    return 0.0 if x < 0.0 else 1.0 if x > 1.0 else x


def make_result(
    *,
    reward: str,
    version: str,
    score: float,
    threshold: float,
    components: dict[str, float],
    reasons: list[str],
    turn_scores: list[float],
    features: dict[str, float] | None = None,
) -> RewardResult:
    """Build a RewardResult without re-validating every field (the hot path).

    Values are produced by our own code and clamped here, so skipping pydantic validation is
    safe and several times faster than ``RewardResult(...)``.
    """
    s = clamp(score)
    if s != s:  # NaN never leaves a reward
        raise ValueError(f"{reward}: score is NaN")
    return fast_model(
        RewardResult,
        {
            "reward": reward,
            "version": version,
            "score": s,
            "passed": s >= threshold,
            "threshold": threshold,
            # in range already is the rule: then the value itself, else clamp() (NaN stays)
            "components": {k: v if 0.0 <= v <= 1.0 else clamp(v) for k, v in components.items()},
            "reasons": tuple(reasons),
            "turn_scores": tuple([t if 0.0 <= t <= 1.0 else clamp(t) for t in turn_scores]),
            "features": features or {},
        },
    )


_FIELDS_SET: dict[type[BaseModel], set[str]] = {}
# BaseModel's own slot descriptors, called directly: cheaper than object.__setattr__'s lookup
_SLOTS = BaseModel.__dict__
_set_dict = _SLOTS["__dict__"].__set__
_set_fields = _SLOTS["__pydantic_fields_set__"].__set__
_set_extra = _SLOTS["__pydantic_extra__"].__set__
_set_private = _SLOTS["__pydantic_private__"].__set__
_new = object.__new__


def fast_model(cls: type[M], values: dict[str, Any]) -> M:
    """An instance of a frozen pydantic model from values our own code computed.

    Skips validation and ``model_construct``'s bookkeeping: the hot path grades thousands of
    rollouts a second. ``values`` must name every field (tests compare the result with a
    validated instance).
    """
    m: M = _new(cls)
    fields = _FIELDS_SET.get(cls)
    if fields is None:
        fields = _FIELDS_SET[cls] = set(cls.model_fields)
    _set_dict(m, values)
    _set_fields(m, fields)
    _set_extra(m, None)
    _set_private(m, None)
    return m
