"""The compatibility rule (docs/events.md): an optional field added by a newer producer is
not a breaking change for downstream readers using ``read_event``, while rlstream's own
strict parse still refuses it on its inputs (dead-lettered as schema_violation)."""

from __future__ import annotations

import json
from dataclasses import dataclass, field

import pytest
from pydantic import ValidationError

from rlstream.delivery import decode_all
from rlstream.events import DatasetReleased, TrainingRunEvent
from rlstream.events.lenient import read_event
from rlstream.transcript import Transcript

pytestmark = pytest.mark.unit


@dataclass
class _Rec:
    value: bytes
    topic: str = "rlstream.training.v1"
    partition: int = 0
    offset: int = 7
    timestamp: int = 0
    key: bytes | None = b"run-1"
    headers: list[tuple[str, bytes]] = field(default_factory=list)


def _training_from_newer_producer() -> bytes:
    event = TrainingRunEvent(
        run_id="run-1",
        dataset_id="ds-1",
        agent="support",
        reward_spec="r",
        state="succeeded",
        backend="builtin",
        method="sft",
        launcher="local",
    )
    data = json.loads(event.dump_json())
    data["gpu_hours"] = 1.5  # an optional field a newer rlstream added
    return json.dumps(data).encode()


def test_downstream_reads_an_event_with_a_field_it_does_not_know() -> None:
    raw = _training_from_newer_producer()
    got = read_event(TrainingRunEvent, raw)
    assert got.run_id == "run-1" and got.state == "succeeded"
    assert "gpu_hours" not in got.model_dump()


def test_rlstream_own_input_parse_still_refuses_it() -> None:
    raw = _training_from_newer_producer()
    with pytest.raises(ValidationError, match="gpu_hours"):
        TrainingRunEvent.model_validate_json(raw)
    result = decode_all([_Rec(raw)], lambda r: TrainingRunEvent.model_validate_json(r.value))
    assert not result.items
    (rejected,) = result.rejected
    assert rejected.verdict.code == "schema_violation"


def test_unknown_fields_at_any_depth_are_dropped() -> None:
    t = {
        "conversation_id": "c1",
        "messages": [
            {"role": "user", "content": "hi", "lang": "en"},
            {"role": "assistant", "content": "hello", "tool_calls": [], "latency_ms": 40},
        ],
        "source": {"kind": "kafka", "topic": "x", "cluster": "eu-1"},
        "sentiment": 0.4,
    }
    got = read_event(Transcript, t)
    assert [m.content for m in got.messages] == ["hi", "hello"]
    assert got.source.topic == "x"
    assert t["sentiment"] == 0.4  # the caller's dict is not modified
    with pytest.raises(ValidationError):
        Transcript.model_validate(t)


def test_nested_extra_in_a_dataset_release() -> None:
    release = {
        "dataset_id": "d",
        "agent": "a",
        "reward_spec": "r",
        "path": "/x",
        "sha256": "0" * 64,
        "profile": {
            "rollouts": 1,
            "groups": 1,
            "groups_multi": 0,
            "pass_rate": 1.0,
            "gradient_support": 0.0,
            "entropy": 0.1,
        },
        "lineage": {"rollout_ids_sha256": "0", "conversations": 1, "task_keys": 1},
    }
    got = read_event(DatasetReleased, json.dumps(release))
    assert got.profile.rollouts == 1 and got.event_id == "dataset-released:d"


@pytest.mark.parametrize(
    "change",
    [
        {"schema_version": 2},  # a breaking change bumps the version: still refused
        {"run_id": None},  # a wrong type
        {"state": "paused"},  # a value this version does not know
    ],
)
def test_lenient_reading_still_refuses_what_is_not_an_added_field(
    change: dict[str, object],
) -> None:
    data = {**json.loads(_training_from_newer_producer()), **change}
    with pytest.raises(ValidationError):
        read_event(TrainingRunEvent, json.dumps(data))


def test_a_missing_required_field_is_refused() -> None:
    data = json.loads(_training_from_newer_producer())
    del data["dataset_id"]
    with pytest.raises(ValidationError, match="dataset_id"):
        read_event(TrainingRunEvent, json.dumps(data))
