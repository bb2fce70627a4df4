"""Which dead letters an operator means: by code, service, time and coordinates.

Pure, so that ``rlstream dlq list|show|replay`` agree on what a filter selects and the
rules are tested without a broker. Times are the letters' ``failed_at`` (when the service
rejected the record), given as an ISO 8601 instant or date, or as an age (``90m``, ``2h``,
``7d``: that long before now).
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta

from rlstream.delivery.replay import not_replayable
from rlstream.errors import ConfigError
from rlstream.events.models import DLQRecord

_AGE = re.compile(r"^\s*(\d+(?:\.\d+)?)\s*([smhdw])\s*$")
_UNIT_S = {"s": 1, "m": 60, "h": 3600, "d": 86400, "w": 604800}

#: (coordinates on the DLQ topic "topic/partition/offset", the letter; None: not a letter)
Letter = tuple[str, DLQRecord | None]


def parse_time(text: str, now: datetime | None = None) -> datetime:
    """An aware UTC instant from ``2025-03-01``, ``2025-03-01T12:00:00Z``, an offset-less
    ISO time (read as UTC) or an age such as ``45m`` / ``2h`` / ``7d`` (before ``now``)."""
    now = now or datetime.now(UTC)
    age = _AGE.match(text)
    if age:
        return now - timedelta(seconds=float(age[1]) * _UNIT_S[age[2]])
    try:
        when = datetime.fromisoformat(text.strip().replace("Z", "+00:00"))
    except ValueError:
        raise ConfigError(
            f"cannot read {text!r} as a time: give an ISO 8601 time (2025-03-01T12:00:00Z), "
            "a date (2025-03-01) or an age (30m, 2h, 7d)"
        ) from None
    return when.replace(tzinfo=UTC) if when.tzinfo is None else when.astimezone(UTC)


def parse_at(text: str) -> tuple[int, int]:
    """``PARTITION/OFFSET`` (or ``PARTITION:OFFSET``) of a letter on its DLQ topic."""
    m = re.fullmatch(r"\s*(\d+)\s*[/:]\s*(\d+)\s*", text)
    if not m:
        raise ConfigError(f"--at {text!r}: expected PARTITION/OFFSET, e.g. 0/42")
    return int(m[1]), int(m[2])


@dataclass(frozen=True)
class LetterFilter:
    """Every given condition must hold; an empty filter selects every letter."""

    codes: frozenset[str] = frozenset()
    services: frozenset[str] = frozenset()
    since: datetime | None = None
    until: datetime | None = None
    #: (partition, offset) on the DLQ topic
    at: frozenset[tuple[int, int]] = frozenset()

    def matches(self, where: str, entry: DLQRecord | None) -> bool:
        if entry is None:  # not a DLQRecord: only an unfiltered listing counts it
            return not (self.codes or self.services or self.since or self.until or self.at)
        if self.codes and entry.error_code not in self.codes:
            return False
        if self.services and entry.service not in self.services:
            return False
        failed = entry.failed_at if entry.failed_at.tzinfo else entry.failed_at.replace(tzinfo=UTC)
        if self.since is not None and failed < self.since:
            return False
        if self.until is not None and failed >= self.until:
            return False
        return not self.at or _coords(where) in self.at


def _coords(where: str) -> tuple[int, int]:
    _, part, off = where.rsplit("/", 2)
    return int(part), int(off)


def make_filter(
    codes: Sequence[str] = (),
    services: Sequence[str] = (),
    since: str | None = None,
    until: str | None = None,
    at: Sequence[str] = (),
    now: datetime | None = None,
) -> LetterFilter:
    """The filter the CLI options describe (times parsed against one ``now``)."""
    now = now or datetime.now(UTC)
    f = LetterFilter(
        frozenset(codes),
        frozenset(services),
        None if since is None else parse_time(since, now),
        None if until is None else parse_time(until, now),
        frozenset(parse_at(a) for a in at),
    )
    if f.since and f.until and f.since >= f.until:
        raise ConfigError("--since must be before --until")
    return f


def select(letters: Iterable[Letter], flt: LetterFilter) -> list[Letter]:
    return [(w, e) for w, e in letters if flt.matches(w, e)]


@dataclass(frozen=True)
class Tally:
    """What a listing says: letters by code, and how many replay, redacted or not."""

    total: int
    by_code: Counter[str]
    replayable: int
    redacted: int
    #: reason -> letters that cannot be replayed from themselves
    skipped: Counter[str]


def tally(letters: Sequence[Letter]) -> Tally:
    codes: Counter[str] = Counter()
    skipped: Counter[str] = Counter()
    replayable = redacted = 0
    for _, e in letters:
        codes[e.error_code if e else "not_a_dead_letter"] += 1
        if e is None:
            continue
        why = not_replayable(e)
        if why is None:
            replayable += 1
            redacted += e.value_redacted
        else:
            skipped[why] += 1
    return Tally(len(letters), codes, replayable, redacted, skipped)
