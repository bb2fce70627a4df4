"""Which dead letters replay from themselves, and the message that replays one."""

from __future__ import annotations

import base64

import pytest

from rlstream.delivery.replay import REPLAYED_FROM, not_replayable, replay_message
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


def test_a_kept_letter_replays_byte_for_byte_onto_its_source_tagged() -> None:
    e = letter()
    assert not_replayable(e) is None
    topic, key, value, headers = replay_message(e, "raw.dlq/0/3")
    assert (topic, key, value) == ("raw", b"k1", b'{"x": 1}')
    assert headers == [("trace", b"\xff\x00"), (REPLAYED_FROM, b"raw.dlq/0/3")]


@pytest.mark.parametrize(
    ("kw", "why"),
    [
        ({"value_redacted": True}, "redacted"),
        ({"value_truncated": True}, "cut"),
        ({"error_code": "unprocessable", "value_b64": ""}, "coordinates"),
    ],
)
def test_letters_that_lost_bytes_are_not_replayable(kw: dict[str, object], why: str) -> None:
    reason = not_replayable(letter(**kw))
    assert reason is not None and why in reason
