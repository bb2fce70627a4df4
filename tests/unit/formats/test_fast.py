"""The fast paths (orjson-copied JSON, unvalidated model builds) give what validation gives."""

from __future__ import annotations

import datetime as dt

import orjson
import pytest
from pydantic import ValidationError

from rlstream.errors import SchemaViolation
from rlstream.formats import parse_record, to_format
from rlstream.formats._common import jsonable
from rlstream.sampledata import generate_transcripts
from rlstream.transcript.model import Message, Transcript

pytestmark = pytest.mark.unit


def _same(a: object, b: object) -> None:
    assert a == b
    assert list(vars(a)) == list(vars(b))
    assert a.model_fields_set == b.model_fields_set  # type: ignore[attr-defined]


@pytest.mark.parametrize("domain", ["support", "math"])
def test_parsed_openai_equals_validated(domain: str) -> None:
    ts, _ = generate_transcripts(3, 6, 4, domain)
    for t in ts:
        record = orjson.loads(orjson.dumps(to_format(t, "openai")))
        got = parse_record(record)
        _same(got, Transcript.model_validate(got.model_dump(exclude_unset=True)))
        for m in got.messages:
            _same(m, Message.model_validate(m.model_dump(exclude_unset=True)))
        assert got.dump_json() == Transcript.model_validate_json(got.dump_json()).dump_json()


def test_jsonable_copies_and_coerces() -> None:
    src = {"a": [1, {"b": "c"}], "d": None}
    out = jsonable(src)
    assert out == src and out is not src and out["a"] is not src["a"]  # type: ignore[index]
    odd = {1: (2, dt.datetime(2020, 1, 1)), "s": {"x"}}
    assert jsonable(odd) == {"1": [2, "2020-01-01 00:00:00"], "s": "{'x'}"}


def test_non_string_keys_still_validated() -> None:
    """A Python record with a non-string key takes the validating path and is refused."""
    rec = {"messages": [{"role": "user", "content": "hi", 7: "x"}]}
    with pytest.raises(SchemaViolation):
        parse_record(rec, "openai")


@pytest.mark.parametrize(
    "changes",
    [{"task_key": "k"}, {"label": None}, {"outcome": {"resolved": True}, "conversation_id": "g"}],
)
def test_with_updates_equals_full_revalidation(changes: dict[str, object]) -> None:
    t = generate_transcripts(1, 1, 2, "support")[0][0]
    got = t.with_updates(**changes)
    _same(got, Transcript.model_validate({**t.model_dump(), **changes}))


@pytest.mark.parametrize("bad", [{"task_key": 5}, {"nope": 1}, {"messages": [{"role": "x"}]}])
def test_with_updates_still_validates_changes(bad: dict[str, object]) -> None:
    t = generate_transcripts(1, 1, 2, "support")[0][0]
    with pytest.raises(ValidationError):
        t.with_updates(**bad)
