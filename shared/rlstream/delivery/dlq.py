"""Dead-letter records: the original bytes and headers, the error, and where it came from."""

from __future__ import annotations

import base64
import hashlib
from collections.abc import Sequence
from typing import Protocol

from rlstream.delivery.disposition import Disposition
from rlstream.delivery.wire import safe_key
from rlstream.events.models import DLQRecord
from rlstream.events.topics import dlq
from rlstream.pii.fields import redact_payload, redact_str, safe_id


class RecordLike(Protocol):
    """The parts of an ``aiokafka.ConsumerRecord`` the pipeline reads."""

    @property
    def topic(self) -> str: ...
    @property
    def partition(self) -> int: ...
    @property
    def offset(self) -> int: ...
    @property
    def timestamp(self) -> int: ...
    @property
    def key(self) -> bytes | None: ...
    @property
    def value(self) -> bytes | None: ...
    @property
    def headers(self) -> Sequence[tuple[str, bytes]]: ...


#: most bytes of a rejected value kept in its dead letter (base64 adds a third): a dead
#: letter must always fit the DLQ topic, whatever was rejected (see docs/delivery.md)
DLQ_PAYLOAD_MAX = 256 * 1024
_HEADER_VALUE_MAX = 512
_HEADERS_MAX = 16


def _b64(data: bytes) -> str:
    return base64.b64encode(data).decode("ascii")


def safe_dlq_key(key: bytes | None) -> bytes | None:
    """The key as received unless it carries PII; then its stable hash."""
    if key is None:
        return None
    try:
        text = key.decode("utf-8")
    except UnicodeDecodeError:
        return key
    safe = safe_id(text)
    return key if safe == text or safe is None else safe.encode()


def _kept(data: bytes, cap: int) -> tuple[bytes, bool, bool]:
    value, redacted = redact_payload(data)
    if len(value) > cap:
        return value[:cap], redacted, True
    return value, redacted, False


def build_dlq_record(
    record: RecordLike,
    verdict: Disposition,
    error: BaseException | None,
    service: str,
    payload_max: int = DLQ_PAYLOAD_MAX,
) -> DLQRecord:
    """A dead letter for a rejected message that always fits the DLQ topic and holds no PII."""
    raw = record.value or b""
    value, redacted, truncated = _kept(raw, payload_max)
    headers: list[tuple[str, str]] = []
    for k, v in list(record.headers or ())[:_HEADERS_MAX]:
        hv, h_red, _ = _kept(v or b"", _HEADER_VALUE_MAX)
        redacted |= h_red
        headers.append((redact_str(safe_key(str(k)))[:256], _b64(hv)))
    key = safe_dlq_key(record.key)
    return DLQRecord(
        topic=record.topic,
        partition=record.partition,
        offset=record.offset,
        timestamp_ms=record.timestamp,
        key_b64=None if key is None else _b64(key[:1024]),
        value_b64=_b64(value),
        headers=tuple(headers),
        error_code=verdict.code,
        error_class=type(error).__name__ if error is not None else "Rejected",
        error_message=redact_str(verdict.reason)[:2000],
        service=service,
        value_sha256=hashlib.sha256(raw).hexdigest(),
        value_bytes=len(raw),
        value_redacted=redacted,
        value_truncated=truncated,
    )


def dlq_message(
    record: RecordLike, entry: DLQRecord
) -> tuple[str, bytes | None, bytes, list[tuple[str, bytes]]]:
    """(topic, key, value, headers) to publish: keyed as received (PII-free), error in
    headers too. The record's own headers travel inside the entry only (redacted, base64)."""
    headers = [
        ("x-rlstream-error-code", entry.error_code.encode()),
        ("x-rlstream-error-class", entry.error_class.encode()),
        ("x-rlstream-source", f"{record.topic}/{record.partition}/{record.offset}".encode()),
    ]
    return dlq(record.topic), safe_dlq_key(record.key), entry.dump_json(), headers
