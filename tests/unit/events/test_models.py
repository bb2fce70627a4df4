from __future__ import annotations

import pytest
from pydantic import ValidationError

from rlstream.events import DatasetProfile, DatasetReleased, DLQRecord, LineageSummary, RawTurnDelta

pytestmark = pytest.mark.unit


def test_turn_delta_roundtrip_and_forbids_extra() -> None:
    d = RawTurnDelta(conversation_id="c1", turn=2, messages=({"role": "user", "content": "hi"},))
    back = RawTurnDelta.model_validate_json(d.dump_json())
    assert back == d and back.schema_version == 1 and back.kind == "turn_delta"
    with pytest.raises(ValidationError):
        RawTurnDelta.model_validate({"conversation_id": "c1", "turn": 0, "bogus": 1})
    with pytest.raises(ValidationError):
        RawTurnDelta(conversation_id="c1", turn=-1)
    with pytest.raises(ValidationError):
        RawTurnDelta.model_validate({"conversation_id": "c", "turn": 0, "schema_version": 2})


def test_models_are_frozen() -> None:
    d = RawTurnDelta(conversation_id="c1", turn=0)
    with pytest.raises(ValidationError):
        d.turn = 3  # type: ignore[misc]


def test_dlq_record_keeps_original_bytes() -> None:
    import base64

    raw = b"\xff\x00not json"
    rec = DLQRecord(
        topic="t",
        partition=1,
        offset=7,
        value_b64=base64.b64encode(raw).decode(),
        error_code="parse_error",
        error_class="ParseError",
        error_message="bad",
        service="ingest",
    )
    back = DLQRecord.model_validate_json(rec.dump_json())
    assert back.original_value() == raw and back.original_key() is None


def test_dataset_released_roundtrip() -> None:
    ev = DatasetReleased(
        dataset_id="d" * 64,
        agent="a",
        reward_spec="s",
        path="/x",
        sha256="d" * 64,
        profile=DatasetProfile(
            rollouts=10, groups=3, groups_multi=3, pass_rate=0.5, gradient_support=0.6
        ),
        lineage=LineageSummary(rollout_ids_sha256="e" * 64, conversations=10, task_keys=3),
    )
    assert DatasetReleased.model_validate_json(ev.dump_json()) == ev


def test_dataset_released_event_id_is_stable_across_announcements() -> None:
    """At-least-once: a release announced twice (later released_at) keeps its event_id."""
    kw = {
        "dataset_id": "d" * 64,
        "agent": "a",
        "reward_spec": "s",
        "path": "/x",
        "sha256": "d" * 64,
        "profile": DatasetProfile(
            rollouts=10, groups=3, groups_multi=3, pass_rate=0.5, gradient_support=0.6
        ),
        "lineage": LineageSummary(rollout_ids_sha256="e" * 64, conversations=10, task_keys=3),
    }
    one, two = DatasetReleased(**kw), DatasetReleased(**kw)
    assert one.event_id == two.event_id == "dataset-released:" + "d" * 64
    assert DatasetReleased.model_validate_json(two.dump_json()).event_id == one.event_id
