"""First version wins: one conversation id, one content, everywhere downstream.

A producer may send a conversation twice: the same bytes (a retry: drop it) or different
content under the same id (a conflict). Publishing both put two scored records with one
rollout id and opposite scores on the topic, and a conflicting version that arrived later
vanished without a trace. The rule: the first version stored wins; an identical repeat is
dropped (``rlstream_duplicates_dropped_total``); a different one is dead-lettered as
``conflicting_version`` (``rlstream_conflicting_versions_total``) and never published.
"""

from __future__ import annotations

import hashlib
from collections.abc import Callable
from typing import TypeVar

from rlstream.delivery.batch import Item, Rejected
from rlstream.delivery.disposition import Action, Disposition
from rlstream.observability.metrics import CONFLICTS, DUPLICATES
from rlstream.transcript import Transcript

T = TypeVar("T")

#: fields that differ between deliveries of one version (where it was read, derived keys)
_NOT_CONTENT = {"source", "task_key", "task_key_rule"}


def transcript_version(t: Transcript) -> bytes:
    """A digest of what the conversation says, not where or when it was read."""
    blob = t.model_dump_json(exclude=_NOT_CONTENT).encode()
    return hashlib.blake2b(blob, digest_size=16).digest()


def conflict(item: Item[T], service: str, what: str) -> Rejected:
    CONFLICTS.labels(service).inc()
    verdict = Disposition(
        Action.DLQ,
        "conflicting_version",
        f"{what}: a different version was accepted first (the first one wins)",
    )
    return Rejected(item.record, verdict, None)


def first_wins(
    items: list[Item[T]],
    key: Callable[[T], str],
    version: Callable[[T], bytes],
    service: str,
) -> tuple[list[Item[T]], list[Rejected]]:
    """Within one batch: keep the first item per key, drop identical repeats, reject
    different ones."""
    first: dict[str, tuple[Item[T], bytes | None]] = {}
    kept: list[Item[T]] = []
    rejected: list[Rejected] = []
    for it in items:
        k = key(it.value)
        prev = first.get(k)
        if prev is None:
            first[k] = (it, None)
            kept.append(it)
            continue
        head, head_version = prev
        if head_version is None:
            head_version = version(head.value)
            first[k] = (head, head_version)
        if version(it.value) == head_version:
            DUPLICATES.labels(service).inc()
        else:
            rejected.append(conflict(it, service, "conversation"))
    return kept, rejected
