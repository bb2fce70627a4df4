"""publish_once: seen -> save -> outbox -> failures -> mark, in that order (fast fakes; the
real-server tests are the ingest and grader integration tests under tests/integration/services).
"""

from __future__ import annotations

import asyncio
from dataclasses import dataclass, field
from typing import Any

import pytest

from rlstream.delivery import Item, RetryBatch
from rlstream.delivery.publish import Publication, publish_once
from rlstream.errors import InputError, MessageTooLarge, TransientError

pytestmark = pytest.mark.unit


@dataclass
class Rec:
    offset: int
    value: bytes = b""
    topic: str = "in"
    partition: int = 0
    timestamp: int = 0
    key: bytes | None = None
    headers: list[tuple[str, bytes]] = field(default_factory=list)


@dataclass
class Seen:
    known: set[str]
    log: list[str]

    async def seen(self, ids: list[str]) -> list[bool]:
        self.log.append("seen")
        return [i in self.known for i in ids]

    async def mark(self, ids: list[str]) -> None:
        self.log.append(f"mark {sorted(ids)}")
        self.known.update(ids)


@dataclass
class Box:
    log: list[str]
    fail: dict[str, BaseException] = field(default_factory=dict)
    sent: list[tuple[str, bytes | None, bytes]] = field(default_factory=list)
    pending: list[tuple[str, bytes | None, bytes, Any]] = field(default_factory=list)

    async def add(
        self,
        topic: str,
        key: bytes | None,
        value: bytes,
        headers: Any = (),
        ref: Any = None,
        parent: Any = None,
    ) -> None:
        self.pending.append((topic, key, value, ref))

    async def flush(self) -> list[tuple[Any, BaseException]]:
        self.log.append("flush")
        failed = []
        for topic, key, value, ref in self.pending:
            if value.decode() in self.fail:
                failed.append((ref, self.fail[value.decode()]))
            else:
                self.sent.append((topic, key, value))
        self.pending = []
        return failed


PUB: Publication[str] = Publication(
    "out", lambda v: v, lambda v: v.encode(), lambda it: it.value.encode()
)


def _run(
    values: list[str],
    known: set[str] = frozenset(),  # type: ignore[assignment]
    bad_rows: set[str] = frozenset(),  # type: ignore[assignment]
    fail: dict[str, BaseException] | None = None,
    reconcile: Any = None,
) -> tuple[list[Any], list[str], Box, list[str]]:
    log: list[str] = []
    saved: list[str] = []
    seen = Seen(set(known), log)
    box = Box(log, fail or {})

    async def save(batch: list[Item[str]]) -> None:
        log.append(f"save {[i.value for i in batch]}")
        if bad_rows & {i.value for i in batch}:
            raise InputError("bad row")
        saved.extend(i.value for i in batch)

    items = [Item(Rec(n), v) for n, v in enumerate(values)]
    bad = asyncio.run(publish_once(items, PUB, save, lambda: box, seen, reconcile))  # type: ignore[arg-type]
    return bad, saved, box, log


def test_seen_items_are_neither_saved_nor_sent_and_the_rest_are_marked_after_sending() -> None:
    bad, saved, box, log = _run(["a", "b", "c"], known={"b"})
    assert bad == [] and saved == ["a", "c"]
    assert box.sent == [("out", b"a", b"a"), ("out", b"c", b"c")]
    assert log == ["seen", "save ['a', 'c']", "flush", "mark ['a', 'c']"]


def test_a_row_the_store_refuses_is_dead_lettered_alone() -> None:
    bad, saved, box, _ = _run(["a", "b", "c", "d"], bad_rows={"c"})
    assert [r.record.offset for r in bad] == [2] and saved == ["a", "b", "d"]
    assert [v for _, _, v in box.sent] == [b"a", b"b", b"d"]


def test_what_the_broker_refuses_is_dead_lettered_and_never_marked() -> None:
    bad, _, _, log = _run(["a", "b"], fail={"b": MessageTooLarge("too big")})
    assert [(r.record.offset, r.verdict.code) for r in bad] == [(1, "message_too_large")]
    assert log[-1] == "mark ['a']"


def test_a_transient_send_failure_retries_the_batch_and_marks_nothing() -> None:
    with pytest.raises(RetryBatch):
        _run(["a", "b"], fail={"b": TransientError("broker down")})


def test_reconcile_sees_repeats_and_decides_what_is_sent() -> None:
    async def reconcile(ok: list[Item[str]], repeats: list[Item[str]], bad: list[Any]) -> Any:
        return ok + [Item(r.record, r.value + "!") for r in repeats]

    _, saved, box, log = _run(["a", "b"], known={"b"}, reconcile=reconcile)
    assert saved == ["a"] and [v for _, _, v in box.sent] == [b"a", b"b!"]
    assert log[-1] == "mark ['a', 'b!']"


def test_nothing_to_send_sends_nothing() -> None:
    bad, saved, box, log = _run(["a"], known={"a"})
    assert (bad, saved, box.sent) == ([], [], []) and log == ["seen"]
