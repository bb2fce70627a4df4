"""Issue 24: no record may stall a partition (dead letters always buildable, per-record
isolation, honest logs, liveness that names the stuck partition)."""

from __future__ import annotations

import base64
import json
import logging
import time
from typing import Any

import pytest
from test_runner import Msg, Rec, runner

from fakes.kafka import Producer
from rlstream.delivery import Rejected, disposition
from rlstream.delivery.dlq import build_dlq_record
from rlstream.delivery.progress import Progress
from rlstream.errors import NestingTooDeep
from rlstream.observability import Health

pytestmark = pytest.mark.unit

EMAIL = "jane.doe@example.com"


def deep(levels: int, inner: bytes = b'"x"') -> bytes:
    return b'{"a":' * levels + inner + b"}" * levels


@pytest.mark.parametrize("levels", [1000, 1010, 1020])
def test_a_deep_record_gets_a_dead_letter_without_its_pii(levels: int) -> None:
    raw = deep(levels, f'"write to {EMAIL}"'.encode())
    rec = Rec(100, value=raw)
    err = NestingTooDeep("JSON nested deeper than 128 levels")
    entry = build_dlq_record(rec, disposition(err), err, "ingest")
    assert entry.error_code == "nesting_too_deep"
    value = base64.b64decode(entry.value_b64)
    assert EMAIL.encode() not in value and entry.value_redacted
    assert entry.value_bytes == len(raw)


def test_an_unredactable_payload_keeps_a_redacted_preview_never_the_raw_value(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    def broken(data: bytes) -> tuple[bytes, bool]:
        raise RuntimeError("redactor bug")

    monkeypatch.setattr("rlstream.delivery.dlq.redact_payload", broken)
    raw = f'{{"msg": "mail {EMAIL} now", "pad": "{"y" * 5000}"}}'.encode()
    err = ValueError("boom")
    entry = build_dlq_record(Rec(7, value=raw, key=EMAIL.encode()), disposition(err), err, "svc")
    value = base64.b64decode(entry.value_b64)
    assert EMAIL.encode() not in value and b"<EMAIL_1>" in value
    assert len(value) <= 300 and entry.value_truncated and entry.value_redacted
    assert entry.key_b64 is None and entry.value_bytes == len(raw)
    assert entry.value_sha256 is not None and "not redactable" in entry.error_message
    assert entry.error_code == "handler_error"


def test_a_letter_that_cannot_be_built_at_all_is_unprocessable(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    def broken(*args: Any, **kwargs: Any) -> Any:
        raise RuntimeError("everything is broken")

    monkeypatch.setattr("rlstream.delivery.dlq.redact_payload", broken)
    monkeypatch.setattr("rlstream.delivery.dlq.redact_str", broken)
    err = ValueError("boom")
    entry = build_dlq_record(Rec(9, value=b"secret"), disposition(err), err, "svc")
    assert entry.error_code == "unprocessable"
    assert (entry.topic, entry.partition, entry.offset) == ("in", 0, 9)
    assert entry.value_b64 == "" and "replay" in entry.error_message


async def test_a_deep_poison_is_dead_lettered_and_the_batch_committed_on_the_first_try() -> None:
    prod = Producer()
    r = runner(prod)
    msg = Msg((Rec(0), Rec(1, value=deep(1000)), Rec(2)))

    async def handle(recs: Any) -> list[Rejected]:
        err = NestingTooDeep("JSON nested deeper than 128 levels")
        return [Rejected(x, disposition(err), err) for x in recs if len(x.value) > 100]

    await r.run(msg, handle)
    assert (msg.acked, msg.nacked) == (1, 0)
    assert [json.loads(v)["error_code"] for _, _, v in prod.sent] == ["nesting_too_deep"]


async def test_a_batch_bug_dead_letters_only_the_record_that_fails_alone() -> None:
    prod = Producer()
    r = runner(prod)
    msg = Msg((Rec(0), Rec(1, value=b"bomb"), Rec(2), Rec(3)))
    handled: list[int] = []

    async def handle(recs: Any) -> list[Rejected]:
        if any(x.value == b"bomb" for x in recs):
            raise ValueError("a bug this record triggers every time")
        handled.extend(x.offset for x in recs)
        return []

    for _ in range(3):
        await r.run(msg, handle)
    assert (msg.acked, msg.nacked) == (1, 2)
    assert handled == [0, 2, 3]
    (letter,) = [json.loads(v) for _, _, v in prod.sent]
    assert (letter["offset"], letter["error_code"]) == (1, "handler_error")
    assert "every time" in letter["error_message"]


async def test_dead_lettered_is_logged_only_after_the_broker_acknowledged(
    caplog: pytest.LogCaptureFixture,
) -> None:
    r = runner(Producer(fail=True))
    msg = Msg((Rec(0),))

    async def handle(recs: Any) -> list[Rejected]:
        err = NestingTooDeep("deep")
        return [Rejected(recs[0], disposition(err), err)]

    with caplog.at_level(logging.WARNING, logger="rlstream.delivery"):
        await r.run(msg, handle)
    assert msg.nacked == 1
    assert not [x for x in caplog.records if x.getMessage() == "dead-lettered"]
    r.producer = Producer()  # type: ignore[assignment]
    with caplog.at_level(logging.WARNING, logger="rlstream.delivery"):
        await r.run(msg, handle)
    assert len([x for x in caplog.records if x.getMessage() == "dead-lettered"]) == 1


class _Consumer:
    def highwater(self, tp: Any) -> int:
        return 50


class _R:
    topic, partition, offset = "in", 0, 31


def test_a_partition_stuck_past_the_setting_fails_liveness_with_where() -> None:
    h = Health()
    p = Progress("svc", stall_after_s=0.01, unhealthy_after_s=0.2)
    h.add_check("progress", p.check)
    h.add_live_check("progress", p.check_live)
    h.set_ready(True)
    p.consumer = _Consumer()
    p.seen([_R()])
    time.sleep(0.05)
    assert h.route("/readyz")[0].startswith("503")
    assert h.route("/healthz")[0].startswith("200")  # not yet: a slow batch is no reason
    time.sleep(0.2)
    status, _, body = h.route("/healthz")
    assert status.startswith("503")
    assert b"partition in/0 stuck at offset 31" in body
    p.committed([type("R", (), {"topic": "in", "partition": 0, "offset": 49})()])
    assert h.route("/healthz")[0].startswith("200")
