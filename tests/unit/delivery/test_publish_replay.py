"""publish_once with replayed inputs (the ``x-rlstream-replay`` marker): seen and stored
is a no-op, seen but not stored goes through once, and outputs carry the marker on."""

from __future__ import annotations

import asyncio
from dataclasses import dataclass, field
from typing import Any

import pytest

from rlstream.delivery import Item
from rlstream.delivery.publish import Publication, publish_once
from rlstream.delivery.replay import REPLAY, REPLAYED_FROM

pytestmark = pytest.mark.unit

MARK = [(REPLAY, b"replay-1"), (REPLAYED_FROM, b"raw/0/7")]


@dataclass
class Rec:
    offset: int
    headers: list[tuple[str, bytes]] = field(default_factory=list)
    value: bytes = b""
    topic: str = "in"
    partition: int = 0
    timestamp: int = 0
    key: bytes | None = None


@dataclass
class World:
    """Seen keys, rows and a broker in one: what a run leaves behind."""

    seen: set[str]
    rows: set[str]
    sent: list[tuple[bytes, list[tuple[str, bytes]]]] = field(default_factory=list)
    asked: list[list[str]] = field(default_factory=list)

    async def is_seen(self, ids: list[str]) -> list[bool]:
        return [i in self.seen for i in ids]

    async def mark(self, ids: list[str]) -> None:
        self.seen.update(ids)

    async def stored(self, ids: list[str]) -> set[str]:
        self.asked.append(list(ids))
        return self.rows & set(ids)


class Seen:
    def __init__(self, w: World) -> None:
        self.seen, self.mark = w.is_seen, w.mark


class Box:
    def __init__(self, w: World) -> None:
        self.w, self.pending = w, []  # type: list[Any]

    async def add(self, topic: str, key: Any, value: bytes, headers: Any = (), **_: Any) -> None:
        self.pending.append((value, list(headers)))

    async def flush(self) -> list[Any]:
        self.w.sent += self.pending
        self.pending = []
        return []


def run(w: World, records: list[tuple[str, bool]], with_store: bool = True) -> None:
    pub: Publication[str] = Publication(
        "out",
        lambda v: v,
        lambda v: v.encode(),
        lambda it: it.value.encode(),
        w.stored if with_store else None,
    )

    async def save(batch: list[Item[str]]) -> None:
        w.rows.update(i.value for i in batch)

    items = [Item(Rec(n, MARK if marked else []), v) for n, (v, marked) in enumerate(records)]
    box = Box(w)
    bad = asyncio.run(publish_once(items, pub, save, lambda: box, Seen(w)))  # type: ignore[arg-type]
    assert bad == []


def test_a_replay_of_what_was_seen_but_never_stored_goes_through_once() -> None:
    w = World(seen={"a", "b"}, rows={"b"})
    run(w, [("a", True), ("b", True), ("c", True)])
    assert sorted(v for v, _ in w.sent) == [b"a", b"c"]  # b: seen and stored: a no-op
    assert w.asked == [["a", "b"]] and w.rows == {"a", "b", "c"}
    run(w, [("a", True), ("b", True), ("c", True)])  # the same replay again
    assert sorted(v for v, _ in w.sent) == [b"a", b"c"]


def test_an_unmarked_repeat_is_dropped_without_asking_the_store() -> None:
    w = World(seen={"a"}, rows=set())
    run(w, [("a", False)])
    assert w.sent == [] and w.asked == []


def test_without_a_store_lookup_a_marked_repeat_is_a_repeat() -> None:
    w = World(seen={"a"}, rows=set())
    run(w, [("a", True)], with_store=False)
    assert w.sent == []


def test_outputs_carry_the_marker_on_and_only_the_marker() -> None:
    w = World(seen=set(), rows=set())
    run(w, [("a", True), ("b", False)])
    assert dict(w.sent) == {b"a": [(REPLAY, b"replay-1")], b"b": []}
