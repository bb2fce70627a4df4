"""Dead-letter records: the original bytes and headers, the error, and where it came from."""

from __future__ import annotations

import base64
import hashlib
import logging
from collections.abc import Sequence
from typing import Protocol

from rlstream import limits
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


log = logging.getLogger("rlstream.delivery")

#: error code of a dead letter that carries the record's coordinates only
UNPROCESSABLE = "unprocessable"

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
    """A dead letter for a rejected message that always fits the DLQ topic and holds no PII.

    Total: if the payload cannot be redacted (whatever the reason), the letter keeps its
    size, sha256, the reason and a redacted, truncated text preview instead of the value;
    if even that fails, an ``unprocessable`` letter with the record's coordinates only.
    """
    try:
        return _full_letter(record, verdict, error, service, payload_max)
    except Exception as exc:
        log.warning("dead letter payload unredactable; keeping a preview", exc_info=True)
        try:
            return _preview_letter(record, verdict, error, service, exc)
        except Exception:
            log.error("dead letter preview failed; keeping coordinates only", exc_info=True)
            return unprocessable_letter(record, service)


def _full_letter(
    record: RecordLike,
    verdict: Disposition,
    error: BaseException | None,
    service: str,
    payload_max: int,
) -> DLQRecord:
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


def _preview_letter(
    record: RecordLike,
    verdict: Disposition,
    error: BaseException | None,
    service: str,
    why: BaseException,
) -> DLQRecord:
    """No original bytes, no key, no headers: a redacted text preview and the facts."""
    raw = record.value or b""
    preview = redact_str(raw[: limits.EXCERPT_CHARS * 4].decode("utf-8", "replace"))
    reason = f"{verdict.reason} (payload not redactable: {type(why).__name__})"
    return DLQRecord(
        topic=record.topic,
        partition=record.partition,
        offset=record.offset,
        timestamp_ms=record.timestamp,
        value_b64=_b64(preview[: limits.EXCERPT_CHARS].encode("utf-8", "replace")),
        error_code=verdict.code,
        error_class=type(error).__name__ if error is not None else "Rejected",
        error_message=redact_str(reason)[:2000],
        service=service,
        value_sha256=hashlib.sha256(raw).hexdigest(),
        value_bytes=len(raw),
        value_redacted=True,
        value_truncated=True,
    )


def unprocessable_letter(record: RecordLike, service: str) -> DLQRecord:
    """The last resort: where the record is, nothing of what it holds."""
    return DLQRecord(
        topic=str(record.topic),
        partition=int(record.partition),
        offset=int(record.offset),
        value_b64="",
        error_code=UNPROCESSABLE,
        error_class="Unprocessable",
        error_message="no dead letter could be built for this record; replay it from the "
        "source topic at these coordinates",
        service=service,
        value_redacted=True,
        value_truncated=True,
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
