"""First version wins within a batch: identical repeats dropped, different ones rejected."""

from __future__ import annotations

import pytest

from rlstream.delivery import Item
from rlstream.delivery.versions import first_wins, transcript_version
from rlstream.transcript import Message, SourceRef, Transcript

pytestmark = pytest.mark.unit


def _t(cid: str, text: str, offset: int) -> Transcript:
    return Transcript(
        conversation_id=cid,
        messages=(Message(role="user", content=text),),
        source=SourceRef(kind="kafka", topic="t", partition=0, offset=offset),
    )


def test_first_wins_drops_repeats_and_rejects_conflicts() -> None:
    items = [
        Item(i, t)
        for i, t in enumerate(
            [_t("a", "x", 0), _t("a", "x", 1), _t("b", "y", 2), _t("a", "z", 3), _t("a", "x", 4)]
        )
    ]
    kept, rejected = first_wins(items, lambda t: t.conversation_id, transcript_version, "svc")
    assert [i.record for i in kept] == [0, 2]
    assert [r.record for r in rejected] == [3]
    assert rejected[0].verdict.code == "conflicting_version"


def test_version_ignores_where_a_record_was_read() -> None:
    assert transcript_version(_t("a", "x", 0)) == transcript_version(_t("a", "x", 9))
    assert transcript_version(_t("a", "x", 0)) != transcript_version(_t("a", "y", 0))
