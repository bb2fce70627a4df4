"""Which dead letters replay from themselves, the messages that replay a letter or a
record, and the replay marker."""

from __future__ import annotations

import base64
import re
from dataclasses import dataclass, field
from datetime import UTC, datetime

import pytest

from rlstream.delivery.replay import (
    REPLAY,
    REPLAYED_FROM,
    carried,
    is_replay,
    new_replay_id,
    not_replayable,
    record_message,
    replay_id,
    replay_message,
)
from rlstream.events import DLQRecord

pytestmark = pytest.mark.unit


def letter(**kw: object) -> DLQRecord:
    base: dict[str, object] = {
        "topic": "raw",
        "partition": 1,
        "offset": 7,
        "key_b64": base64.b64encode(b"k1").decode(),
        "value_b64": base64.b64encode(b'{"x": 1}').decode(),
        "headers": (("trace", base64.b64encode(b"\xff\x00").decode()),),
        "error_code": "schema_violation",
        "error_class": "ValidationError",
        "error_message": "messages: not a list",
        "service": "ingest",
    }
    return DLQRecord(**{**base, **kw})  # type: ignore[arg-type]


@dataclass
class Rec:
    headers: list[tuple[str, bytes]] = field(default_factory=list)
    topic: str = "raw"
    partition: int = 2
    offset: int = 41
    timestamp: int = 0
    key: bytes | None = b"c1"
    value: bytes | None = b"{}"


def test_a_kept_letter_replays_byte_for_byte_onto_its_source_marked() -> None:
    e = letter()
    assert not_replayable(e) is None
    topic, key, value, headers = replay_message(e, "raw.dlq/0/3", "replay-x")
    assert (topic, key, value) == ("raw", b"k1", b'{"x": 1}')
    assert headers == [
        ("trace", b"\xff\x00"),
        (REPLAY, b"replay-x"),
        (REPLAYED_FROM, b"raw.dlq/0/3"),
    ]


def test_a_redacted_letter_replays_as_stored_redacted() -> None:
    stored = b'{"text": "mail <EMAIL>"}'
    e = letter(value_b64=base64.b64encode(stored).decode(), value_redacted=True)
    assert not_replayable(e) is None
    assert replay_message(e, "raw.dlq/0/4", "r")[2] == stored


@pytest.mark.parametrize(
    ("kw", "why"),
    [
        ({"value_truncated": True}, "cut"),
        ({"value_truncated": True, "value_redacted": True}, "cut"),
        ({"error_code": "unprocessable", "value_b64": ""}, "coordinates"),
    ],
)
def test_letters_that_lost_bytes_are_not_replayable(kw: dict[str, object], why: str) -> None:
    reason = not_replayable(letter(**kw))
    assert reason is not None and why in reason


def test_a_replay_of_a_replay_carries_one_set_of_tags_the_newest() -> None:
    old = [("a", b"1"), (REPLAY, b"replay-old"), (REPLAYED_FROM, b"raw/0/1")]
    e = letter(headers=tuple((k, base64.b64encode(v).decode()) for k, v in old))
    _, _, _, headers = replay_message(e, "raw.dlq/0/9", "replay-new")
    assert headers == [("a", b"1"), (REPLAY, b"replay-new"), (REPLAYED_FROM, b"raw.dlq/0/9")]


def test_a_record_of_a_range_goes_back_onto_its_topic_or_another_marked() -> None:
    r = Rec(headers=[("traceparent", b"00-ab")])
    topic, key, value, headers = record_message(r, "rid")
    assert (topic, key, value) == ("raw", b"c1", b"{}")
    assert headers == [("traceparent", b"00-ab"), (REPLAY, b"rid"), (REPLAYED_FROM, b"raw/2/41")]
    assert record_message(r, "rid", "raw.backfill")[0] == "raw.backfill"
    assert record_message(Rec(value=None), "rid")[2] == b""


def test_the_marker_is_read_and_carried_on_alone() -> None:
    marked = Rec(headers=[("x", b"1"), (REPLAY, b"replay-7"), (REPLAYED_FROM, b"raw/0/1")])
    assert is_replay(marked) and replay_id(marked) == "replay-7"
    assert carried(marked) == [(REPLAY, b"replay-7")]
    assert not is_replay(Rec()) and carried(Rec()) == []
    assert not is_replay(Rec(headers=[(REPLAYED_FROM, b"raw/0/1")]))  # provenance only


def test_replay_ids_sort_by_time_and_differ_within_a_second() -> None:
    now = datetime(2025, 3, 1, 12, 0, 5, tzinfo=UTC)
    a, b = new_replay_id(now), new_replay_id(now)
    assert re.fullmatch(r"replay-20250301T120005Z-[0-9a-f]{6}", a) and a != b
