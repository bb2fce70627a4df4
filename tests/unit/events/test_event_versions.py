"""docs/events.md's promise: a record of an unknown schema_version (or with an unknown field)
is dead-lettered as schema_violation, naming the field and never its value."""

from __future__ import annotations

import orjson
import pytest

from rlstream.delivery import Action, decode_all
from rlstream.events import ScoredEvent, TranscriptEvent
from rlstream.rollout import ScoredRollout
from rlstream.transcript import Message, Transcript

pytestmark = pytest.mark.unit


class Rec:
    topic, partition, offset, timestamp, key, headers = "t", 0, 0, 0, None, []

    def __init__(self, value: bytes) -> None:
        self.value = value


def test_the_kafka_contracts_are_the_internal_models() -> None:
    assert TranscriptEvent is Transcript and ScoredEvent is ScoredRollout


@pytest.mark.parametrize(
    ("change", "field"),
    [({"schema_version": 2}, "schema_version"), ({"secret_new_field": "s3cret"}, "secret")],
)
def test_unknown_versions_and_fields_are_dead_lettered(change: dict, field: str) -> None:
    t = Transcript(conversation_id="c1", messages=(Message(role="user", content="hi"),))
    good = t.model_dump_json().encode()
    bad = orjson.dumps({**orjson.loads(good), **change})
    out = decode_all([Rec(good), Rec(bad), Rec(good)], lambda r: Transcript.load_json(r.value))
    assert len(out.items) == 2 and len(out.rejected) == 1
    verdict = out.rejected[0].verdict
    assert verdict.action is Action.DLQ and verdict.code == "schema_violation"
    assert field in verdict.reason and "s3cret" not in verdict.reason
