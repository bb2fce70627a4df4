"""Dead-letter records: the original bytes and headers, the error, and where it came from."""

from __future__ import annotations

import base64
from collections.abc import Sequence
from typing import Any, Protocol

from rlstream.delivery.disposition import Disposition
from rlstream.events.models import DLQRecord
from rlstream.events.topics import dlq


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


def _b64(data: bytes) -> str:
    return base64.b64encode(data).decode("ascii")


def build_dlq_record(
    record: RecordLike, verdict: Disposition, error: BaseException | None, service: str
) -> DLQRecord:
    """A replayable record of a rejected message."""
    headers: Any = record.headers or ()
    return DLQRecord(
        topic=record.topic,
        partition=record.partition,
        offset=record.offset,
        timestamp_ms=record.timestamp,
        key_b64=None if record.key is None else _b64(record.key),
        value_b64=_b64(record.value or b""),
        headers=tuple((str(k), _b64(v or b"")) for k, v in headers),
        error_code=verdict.code,
        error_class=type(error).__name__ if error is not None else "Rejected",
        error_message=verdict.reason,
        service=service,
    )


def dlq_message(
    record: RecordLike, entry: DLQRecord
) -> tuple[str, bytes | None, bytes, list[tuple[str, bytes]]]:
    """(topic, key, value, headers) to publish: keyed as received, error in headers too."""
    headers = list(record.headers or ())
    headers += [
        ("x-rlstream-error-code", entry.error_code.encode()),
        ("x-rlstream-error-class", entry.error_class.encode()),
        ("x-rlstream-source", f"{record.topic}/{record.partition}/{record.offset}".encode()),
    ]
    return dlq(record.topic), record.key, entry.dump_json(), headers
