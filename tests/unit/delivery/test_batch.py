from __future__ import annotations

import base64
import json
from dataclasses import dataclass, field

import pytest

from rlstream.delivery import (
    Item,
    RetryBatch,
    apply_isolating,
    build_dlq_record,
    decode_all,
    disposition,
    dlq_message,
)
from rlstream.errors import TransientError
from rlstream.events import DLQRecord

pytestmark = pytest.mark.unit


@dataclass
class Rec:
    value: bytes | None
    offset: int = 0
    topic: str = "rlstream.conversations.raw"
    partition: int = 2
    timestamp: int = 1234
    key: bytes | None = b"k"
    headers: list[tuple[str, bytes]] = field(default_factory=lambda: [("h", b"v")])


def test_decode_all_dead_letters_bad_records_and_skips_none() -> None:
    recs = [Rec(b'{"a": 1}', 0), Rec(b"{bad", 1), Rec(b"null", 2), Rec(b'{"a": 2}', 3)]
    res = decode_all(recs, lambda r: json.loads(r.value or b""))
    assert [i.value for i in res.items] == [{"a": 1}, {"a": 2}]
    assert [(r.record.offset, r.verdict.code) for r in res.rejected] == [(1, "parse_error")]


def test_decode_all_transient_raises_retry() -> None:
    def boom(_: Rec) -> None:
        raise TransientError("pg down")

    with pytest.raises(RetryBatch):
        decode_all([Rec(b"x")], boom)


async def test_apply_isolating_bisects_to_the_poison_row() -> None:
    calls: list[int] = []

    async def effect(items: list[Item[int]]) -> None:
        calls.append(len(items))
        if any(i.value == 5 for i in items):
            raise ValueError("row 5 is bad")

    items = [Item(Rec(b"", i), i) for i in range(16)]
    ok, bad = await apply_isolating(items, effect)
    assert sorted(i.value for i in ok) == [i for i in range(16) if i != 5]
    assert [b.record.offset for b in bad] == [5] and bad[0].verdict.code == "handler_error"
    assert len(calls) <= 1 + 2 * 4  # log2(16) levels, two calls each


async def test_apply_isolating_transient_raises_retry() -> None:
    async def effect(items: list[Item[int]]) -> None:
        raise ConnectionResetError("gone")

    with pytest.raises(RetryBatch):
        await apply_isolating([Item(Rec(b""), 1), Item(Rec(b""), 2)], effect)


def test_dlq_record_and_message() -> None:
    rec = Rec(b"\x00raw bytes", offset=42)
    err = ValueError("boom")
    entry = build_dlq_record(rec, disposition(err), err, "ingest")
    assert base64.b64decode(entry.value_b64) == b"\x00raw bytes"
    assert (entry.topic, entry.partition, entry.offset) == (rec.topic, 2, 42)
    assert entry.error_class == "ValueError" and entry.error_code == "handler_error"
    assert entry.headers == (("h", base64.b64encode(b"v").decode()),)
    topic, key, value, headers = dlq_message(rec, entry)
    assert topic == "rlstream.conversations.raw.dlq" and key == b"k"
    assert DLQRecord.model_validate_json(value).original_value() == b"\x00raw bytes"
    assert ("x-rlstream-error-code", b"handler_error") in headers
    assert entry.value_bytes == 10 and not entry.value_truncated and not entry.value_redacted
