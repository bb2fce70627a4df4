"""Ingest stores subject fields as keyed stand-ins: no raw value, equal values equal."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from rlstream.ingest import IngestOptions, Ingestor
from rlstream.pii import keys

pytestmark = pytest.mark.unit


@pytest.fixture(autouse=True)
def keyed() -> Iterator[keys.Pseudonymiser]:
    p = keys.Pseudonymiser(b"s" * 40)
    keys.configure(p)
    yield p
    keys.configure(None)


def _record(cid: str, **metadata: object) -> dict[str, object]:
    return {
        "conversation_id": cid,
        "messages": [{"role": "user", "content": "hi"}, {"role": "assistant", "content": "yo"}],
        "metadata": metadata,
    }


def test_subject_fields_become_keyed_stand_ins(keyed: keys.Pseudonymiser) -> None:
    ing = Ingestor(IngestOptions())
    a = ing.process(_record("a", customer_id="C-20931", email="jane@example.com", n=3))
    b = ing.process(_record("b", customer_id="C-20931"))
    assert a.metadata["customer_id"] == keyed.stand_in("C-20931") == b.metadata["customer_id"]
    assert a.metadata["email"] == keyed.stand_in("jane@example.com")  # not <EMAIL_1>
    assert a.metadata["n"] == 3
    assert "C-20931" not in a.model_dump_json() and "jane" not in a.model_dump_json()


def test_other_fields_and_unredacted_ingest_are_left_alone() -> None:
    t = Ingestor(IngestOptions(subject_fields=("account",))).process(
        _record("a", customer_id="C-1", account=42)
    )
    assert t.metadata["customer_id"] == "C-1"
    assert t.metadata["account"] == keys.stand_in("42")
    raw = Ingestor(IngestOptions(redact=False)).process(_record("a", customer_id="C-1"))
    assert raw.metadata["customer_id"] == "C-1"
