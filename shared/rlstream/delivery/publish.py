"""The one publish path of a consuming service: seen -> save -> outbox -> failures -> mark.

The order is the crash-safety argument. An item already marked *seen* in Redis was sent
before, so it is neither saved nor sent again; the rest are saved (idempotent, a bad row
isolated by bisection), then sent through the outbox, and only what the broker acknowledged
is marked seen. The consumer commits its offsets after this returns, so a crash anywhere
before the mark re-runs the batch: the rows are found stored and the events are sent again
(at least once on the topic, once in Postgres, never marked without being sent).

A service says what is specific to it in a :class:`Publication` (which topic, the id its
seen keys use, the message key and bytes) and, when a repeat needs more than "drop it"
(the ingest compares versions and republishes the stored first one), a ``reconcile`` step.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Generic, TypeVar

from rlstream.delivery.batch import Item, Rejected, apply_isolating, reject_or_retry
from rlstream.delivery.idempotency import SeenKeys
from rlstream.delivery.outbox import Outbox

T = TypeVar("T")

#: (saved items, items already marked seen, rejects so far) -> the items to send
Reconcile = Callable[[list[Item[T]], list[Item[T]], list[Rejected]], Awaitable[list[Item[T]]]]


@dataclass(frozen=True)
class Publication(Generic[T]):
    """Where and how one kind of event goes out."""

    topic: str
    #: the id the seen keys use (rollout id, conversation id)
    ident: Callable[[T], str]
    key: Callable[[T], bytes]
    value: Callable[[Item[T]], bytes]


async def publish_once(
    items: list[Item[T]],
    pub: Publication[T],
    save: Callable[[list[Item[T]]], Awaitable[None]],
    outbox: Callable[[], Outbox[Item[T]]],
    seen: SeenKeys | None,
    reconcile: Reconcile[T] | None = None,
) -> list[Rejected]:
    """Save, send and mark ``items``; returns the records to dead-letter.

    Transient failures (broker, database) raise :class:`~rlstream.delivery.RetryBatch`
    from :func:`~rlstream.delivery.reject_or_retry` and nothing is marked."""
    flags = [False] * len(items)
    if seen is not None and items:
        flags = await seen.seen([pub.ident(i.value) for i in items])
    fresh = [i for i, f in zip(items, flags, strict=True) if not f]
    repeats = [i for i, f in zip(items, flags, strict=True) if f]
    ok, bad = await apply_isolating(fresh, save)
    if reconcile is not None:
        ok = await reconcile(ok, repeats, bad)
    if not ok:
        return bad
    box = outbox()
    for it in ok:
        await box.add(pub.topic, pub.key(it.value), pub.value(it), ref=it)
    failed = {id(ref): exc for ref, exc in await box.flush()}
    bad += [reject_or_retry(it.record, failed[id(it)]) for it in ok if id(it) in failed]
    if seen is not None:
        await seen.mark([pub.ident(it.value) for it in ok if id(it) not in failed])
    return bad
