"""Batch helpers: decode per record, apply effects per batch, isolate poison by bisection.

A batch is the unit of commit. Per-record failures become dead letters; a failure of a
batched effect (one SQL statement for 500 rows) is retried on halves until the offending
record is alone, so a single bad row costs O(log n) extra statements and never the batch.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass, field
from typing import Generic, TypeVar

from rlstream.delivery.disposition import Action, Disposition, RetryBatch, disposition
from rlstream.delivery.dlq import RecordLike

T = TypeVar("T")


@dataclass(slots=True)
class Item(Generic[T]):
    """A decoded value and the record it came from (for DLQ and lineage)."""

    record: RecordLike
    value: T


@dataclass(slots=True)
class Rejected:
    record: RecordLike
    verdict: Disposition
    error: BaseException | None


@dataclass(slots=True)
class BatchResult(Generic[T]):
    items: list[Item[T]] = field(default_factory=list)
    rejected: list[Rejected] = field(default_factory=list)


def reject_or_retry(record: RecordLike, exc: BaseException) -> Rejected:
    """Dead-letter verdict for ``record``, or raise :class:`RetryBatch` if transient."""
    verdict = disposition(exc)
    if verdict.action is Action.RETRY:
        raise RetryBatch(exc, verdict.code) from exc
    return Rejected(record, verdict, exc)


def decode_all(
    records: Sequence[RecordLike], decode: Callable[[RecordLike], T | None]
) -> BatchResult[T]:
    """Decode each record; ``None`` means consumed with no output (e.g. a partial delta)."""
    out: BatchResult[T] = BatchResult()
    for record in records:
        try:
            value = decode(record)
        except RetryBatch:
            raise
        except Exception as exc:
            out.rejected.append(reject_or_retry(record, exc))
            continue
        if value is not None:
            out.items.append(Item(record, value))
    return out


async def apply_isolating(
    items: list[Item[T]], effect: Callable[[list[Item[T]]], Awaitable[None]]
) -> tuple[list[Item[T]], list[Rejected]]:
    """Run ``effect`` on all items; on a data error, bisect to find and reject the culprits."""
    if not items:
        return [], []
    try:
        await effect(items)
    except RetryBatch:
        raise
    except Exception as exc:
        if len(items) == 1:
            return [], [reject_or_retry(items[0].record, exc)]
        verdict = disposition(exc)
        if verdict.action is Action.RETRY:
            raise RetryBatch(exc, verdict.code) from exc
        mid = len(items) // 2
        ok_a, bad_a = await apply_isolating(items[:mid], effect)
        ok_b, bad_b = await apply_isolating(items[mid:], effect)
        return ok_a + ok_b, bad_a + bad_b
    return items, []
