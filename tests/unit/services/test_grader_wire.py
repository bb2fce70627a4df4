"""The grader's scored wire form reuses the consumed transcript bytes: same JSON value."""

from __future__ import annotations

import orjson
import pytest

from rlstream.events import ScoredEvent
from rlstream.grading import GradeFailure, RewardSpec, grade_many
from rlstream.services.grader.handler import scored_json
from rlstream.transcript import Message, Transcript

pytestmark = pytest.mark.unit


def _rollout() -> tuple[bytes, object]:
    t = Transcript(
        conversation_id="c1",
        task_key="task-1",
        agent="support",
        messages=(
            Message(role="user", content="where is my parcel? ünïcode"),
            Message(role="assistant", content="It ships today."),
        ),
        outcome={"resolved": True},
    )
    raw = t.dump_json()
    consumed = Transcript.load_json(raw)
    spec = RewardSpec.parse("outcome")
    (res,) = list(grade_many([consumed], spec))
    assert not isinstance(res, GradeFailure)
    assert res.transcript is consumed  # what makes the bytes reusable
    return raw, res


def test_spliced_event_is_the_same_json_value_and_validates() -> None:
    raw, res = _rollout()
    spliced = scored_json(res, raw)  # type: ignore[arg-type]
    assert orjson.loads(spliced) == orjson.loads(res.model_dump_json())  # type: ignore[attr-defined]
    assert ScoredEvent.model_validate_json(spliced) == res


def test_without_consumed_bytes_the_rollout_is_serialised_in_full() -> None:
    _, res = _rollout()
    assert scored_json(res, None) == res.model_dump_json().encode()  # type: ignore[attr-defined]
