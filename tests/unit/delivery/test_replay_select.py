"""The dead-letter filters of ``rlstream dlq list|show|replay`` and the times they read."""

from __future__ import annotations

import base64
from datetime import UTC, datetime, timedelta, timezone

import pytest

from rlstream.delivery.replay_select import make_filter, parse_at, parse_time, select, tally
from rlstream.errors import ConfigError
from rlstream.events import DLQRecord

pytestmark = pytest.mark.unit

NOW = datetime(2025, 3, 10, 12, 0, tzinfo=UTC)


def letter(code: str, service: str, hours_ago: float, **kw: object) -> DLQRecord:
    return DLQRecord(
        topic="raw", partition=0, offset=1, value_b64=base64.b64encode(b"{}").decode(),
        error_code=code, error_class="E", error_message="m", service=service,
        failed_at=NOW - timedelta(hours=hours_ago), **kw,  # type: ignore[arg-type]
    )  # fmt: skip


LETTERS = [
    ("raw.dlq/0/0", letter("unknown_format", "ingest", 50)),
    ("raw.dlq/0/1", letter("no_reward_spec", "grader", 5, value_redacted=True)),
    ("raw.dlq/1/0", letter("no_reward_spec", "grader", 1)),
    ("raw.dlq/1/1", letter("message_too_large", "ingest", 0.5, value_truncated=True)),
    ("raw.dlq/2/0", None),
]


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("2h", NOW - timedelta(hours=2)),
        ("90m", NOW - timedelta(minutes=90)),
        ("7d", NOW - timedelta(days=7)),
        ("1.5h", NOW - timedelta(minutes=90)),
        ("30s", NOW - timedelta(seconds=30)),
        ("2025-03-01", datetime(2025, 3, 1, tzinfo=UTC)),
        ("2025-03-01T08:30:00Z", datetime(2025, 3, 1, 8, 30, tzinfo=UTC)),
        ("2025-03-01T08:30:00+02:00", datetime(2025, 3, 1, 6, 30, tzinfo=UTC)),
    ],
)
def test_times_read_as_utc_instants_or_ages(text: str, expected: datetime) -> None:
    got = parse_time(text, NOW)
    assert got == expected and got.tzinfo is not None


def test_a_time_that_is_none_of_the_forms_says_which_forms_exist() -> None:
    with pytest.raises(ConfigError, match="ISO 8601"):
        parse_time("yesterday", NOW)


def test_parse_at_reads_partition_and_offset() -> None:
    assert parse_at("2/40") == (2, 40) and parse_at("0:7") == (0, 7)
    with pytest.raises(ConfigError):
        parse_at("2")


def test_an_empty_filter_selects_every_letter_even_the_unreadable() -> None:
    assert len(select(LETTERS, make_filter(now=NOW))) == 5


def test_filters_by_code_service_time_and_coordinates_combine() -> None:
    def picked(**kw: object) -> list[str]:
        return [w for w, _ in select(LETTERS, make_filter(now=NOW, **kw))]  # type: ignore[arg-type]

    assert picked(codes=["no_reward_spec"]) == ["raw.dlq/0/1", "raw.dlq/1/0"]
    assert picked(services=["ingest"]) == ["raw.dlq/0/0", "raw.dlq/1/1"]
    assert picked(since="2h") == ["raw.dlq/1/0", "raw.dlq/1/1"]
    assert picked(until="2h") == ["raw.dlq/0/0", "raw.dlq/0/1"]
    assert picked(since="1d", until="50m") == ["raw.dlq/0/1", "raw.dlq/1/0"]
    assert picked(codes=["no_reward_spec"], since="2h") == ["raw.dlq/1/0"]
    assert picked(at=["1/1", "0/0"]) == ["raw.dlq/0/0", "raw.dlq/1/1"]


def test_a_naive_failed_at_is_read_as_utc() -> None:
    e = letter("x", "ingest", 0).model_copy(update={"failed_at": datetime(2025, 3, 10, 11, 0)})
    assert select([("d/0/0", e)], make_filter(since="2025-03-10T10:30:00Z", now=NOW))
    aware = datetime(2025, 3, 10, 13, 0, tzinfo=timezone(timedelta(hours=2)))  # 11:00 UTC
    e2 = e.model_copy(update={"failed_at": aware})
    assert not select([("d/0/0", e2)], make_filter(since="2025-03-10T11:30:00Z", now=NOW))


def test_since_after_until_is_refused() -> None:
    with pytest.raises(ConfigError, match="before"):
        make_filter(since="1h", until="2h", now=NOW)


def test_tally_counts_codes_replayable_redacted_and_why_not() -> None:
    t = tally(LETTERS)
    assert t.total == 5 and t.by_code["no_reward_spec"] == 2 and t.by_code["not_a_dead_letter"] == 1
    assert (t.replayable, t.redacted) == (3, 1)
    assert sum(t.skipped.values()) == 1 and "cut" in next(iter(t.skipped))
