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

A *replayed* input (:mod:`rlstream.delivery.replay`: the ``x-rlstream-replay`` header) that
is marked seen is looked up in the store (``Publication.stored``): seen and stored is a
repeat as above, seen but not stored (a restored database) is fresh. Outputs of a replayed
input carry its marker on.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Generic, TypeVar

from rlstream.delivery.batch import Item, Rejected, apply_isolating, reject_or_retry
from rlstream.delivery.idempotency import SeenKeys
from rlstream.delivery.outbox import Outbox
from rlstream.delivery.replay import carried, is_replay

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
    #: which of these ids are stored (asked only for replayed inputs marked seen); None:
    #: a replayed input marked seen is a repeat like any other
    stored: Callable[[list[str]], Awaitable[set[str]]] | None = None


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
        if pub.stored is not None and any(flags):
            await _unless_stored(items, flags, pub)
    fresh = [i for i, f in zip(items, flags, strict=True) if not f]
    repeats = [i for i, f in zip(items, flags, strict=True) if f]
    ok, bad = await apply_isolating(fresh, save)
    if reconcile is not None:
        ok = await reconcile(ok, repeats, bad)
    if not ok:
        return bad
    box = outbox()
    for it in ok:
        await box.add(
            pub.topic,
            pub.key(it.value),
            pub.value(it),
            carried(it.record),
            ref=it,
            parent=it.record,
        )
    failed = {id(ref): exc for ref, exc in await box.flush()}
    bad += [reject_or_retry(it.record, failed[id(it)]) for it in ok if id(it) in failed]
    if seen is not None:
        await seen.mark([pub.ident(it.value) for it in ok if id(it) not in failed])
    return bad


async def _unless_stored(items: list[Item[T]], flags: list[bool], pub: Publication[T]) -> None:
    """Clear the seen flag of each replayed item the store does not hold."""
    assert pub.stored is not None
    marked = [k for k, f in enumerate(flags) if f and is_replay(items[k].record)]
    if not marked:
        return
    have = await pub.stored([pub.ident(items[k].value) for k in marked])
    for k in marked:
        if pub.ident(items[k].value) not in have:
            flags[k] = False
