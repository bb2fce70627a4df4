"""Reading Kafka records without letting one record's bytes stop a partition.

Two places decode bytes before a service sees a record, and either can fail for a single
hostile record:

* FastStream's Kafka parser decodes every header *value* as UTF-8 before the handler runs;
  one non-UTF-8 value failed the whole batch outside the service's per-record handling.
  :func:`raw_batch_parser` hands records through with their headers as bytes.
* aiokafka decodes every header *key* as UTF-8 while unpacking a fetched record batch; one
  non-UTF-8 key raised from the fetcher on every poll (a hot restart loop, partition
  stalled). :func:`install_tolerant_fetch` makes the fetcher re-read such a batch with the
  pure-Python reader and a lenient key decode (``surrogateescape``, so the original bytes
  are recoverable), and turns a record that still cannot be read into a placeholder
  carrying :data:`UNREADABLE_HEADER`. The service then dead-letters those records
  (:func:`unreadable_reason`) and counts them, and the rest of the batch flows.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from typing import Any

from aiokafka.consumer import fetcher as _fetcher
from aiokafka.record import default_records as _dr
from aiokafka.record.memory_records import _MemoryRecordsPy

#: header set on a placeholder for a record whose bytes could not be parsed at all
UNREADABLE_HEADER = "x-rlstream-unreadable"

_FAST_RECORDS = _fetcher.MemoryRecords


class _LenientBytes(bytearray):
    """A buffer whose slices decode header keys with ``surrogateescape`` instead of failing."""

    def __getitem__(self, item: Any) -> Any:
        got = super().__getitem__(item)
        return _LenientBytes(got) if isinstance(item, slice) else got

    def decode(self, encoding: str = "utf-8", errors: str = "strict") -> str:
        return bytearray.decode(self, encoding, "surrogateescape")


def _python_batch(data: bytes, index: int) -> Any:
    """The ``index``-th record batch of ``data``, read by aiokafka's pure-Python reader."""
    recs = _MemoryRecordsPy(data)
    for _ in range(index):
        recs.next_batch()
    raw = recs._next_slice
    if raw is None:
        raise ValueError(f"no record batch #{index}")
    return _dr._DefaultRecordBatchPy(bytes(raw))


def _placeholder(offset: int, reason: str) -> Any:
    return _dr._DefaultRecordPy(offset, -1, 0, None, None, [(UNREADABLE_HEADER, reason.encode())])


class _TolerantBatch:
    """A record batch that falls back to a lenient read when the fast reader raises."""

    def __init__(self, batch: Any, data: bytes, index: int) -> None:
        self._batch = batch
        self._data = data
        self._index = index

    def __getattr__(self, name: str) -> Any:
        return getattr(self._batch, name)

    def __next__(self) -> Any:  # control batches are read with next()
        return next(self._batch)

    def __iter__(self) -> Iterator[Any]:
        last = -1
        try:
            for rec in self._batch:
                last = rec.offset
                yield rec
            return
        except (UnicodeDecodeError, ValueError, IndexError) as exc:
            first_error = exc
        end = self._batch.next_offset
        try:
            py = _python_batch(self._data, self._index)
            iter(py)  # decompresses into py._buffer
            py._buffer = _LenientBytes(py._buffer)
            for rec in py:
                if rec.offset > last:
                    last = rec.offset
                    yield rec
            return
        except Exception as exc:
            reason = f"unreadable record bytes: {type(first_error).__name__}; {exc!r}"[:300]
        for off in range(last + 1 if last >= 0 else self._batch.base_offset, end):
            yield _placeholder(off, reason)


class TolerantMemoryRecords:
    """aiokafka's fast ``MemoryRecords`` whose v2 batches survive undecodable records."""

    def __init__(self, data: bytes) -> None:
        self._data = bytes(data)
        self._fast = _FAST_RECORDS(data)
        self._index = 0

    def has_next(self) -> bool:
        return bool(self._fast.has_next())

    def size_in_bytes(self) -> int:
        return int(self._fast.size_in_bytes())

    def next_batch(self) -> Any:
        batch = self._fast.next_batch()
        index = self._index
        self._index += 1
        if batch is None or getattr(batch, "magic", 2) < 2:
            return batch
        return _TolerantBatch(batch, self._data, index)


def install_tolerant_fetch() -> None:
    """Make every consumer in this process read record batches tolerantly (idempotent)."""
    _fetcher.MemoryRecords = TolerantMemoryRecords


def header_key_ok(key: str) -> bool:
    try:
        key.encode("utf-8")
    except UnicodeEncodeError:
        return False
    return True


def safe_key(key: str) -> str:
    """A header key that can be encoded again (undecodable bytes shown as ``\\xNN``)."""
    if header_key_ok(key):
        return key
    return key.encode("utf-8", "surrogateescape").decode("utf-8", "backslashreplace")


def unreadable_reason(headers: Sequence[tuple[str, bytes | None]] | None) -> str | None:
    """Why a consumed record cannot be handed to a service, or None if it can."""
    for k, v in headers or ():
        if k == UNREADABLE_HEADER:
            return (v or b"").decode("utf-8", "replace")
        if not header_key_ok(k):
            return f"header key is not UTF-8: {safe_key(k)!r}"
    return None


async def raw_batch_parser(msg: tuple[Any, ...], original: Any) -> Any:
    """FastStream parser: build the framework's message without decoding any header.

    FastStream's own batch parser decodes every header value as UTF-8; a single binary
    value raised before the service's handler saw the batch. Headers stay bytes on the
    raw records (``message.raw_message``), which is all the services read.
    """
    bare = tuple(_NoHeaders(r) for r in msg)
    parsed = await original(bare)
    parsed.raw_message = msg
    return parsed


class _NoHeaders:
    __slots__ = ("_r",)

    def __init__(self, record: Any) -> None:
        self._r = record

    def __getattr__(self, name: str) -> Any:
        return getattr(self._r, name)

    @property
    def headers(self) -> tuple[()]:
        return ()
