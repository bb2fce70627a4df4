"""Helpers the shipped rewards share: option handling and word-boundary matching.

Keyword checks compile to one ``\\b``-anchored alternation at import time, so "hate" never
fires inside "whatever" and no reward pays for regex compilation per call.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from typing import Any

from rlstream.errors import ConfigError

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
