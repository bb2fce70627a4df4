from __future__ import annotations

import pytest

from rlstream.assembly import Assembler, AssemblyOptions, MemoryTurnStore
from rlstream.errors import LateTurnError
from rlstream.events import RawTurnDelta
from rlstream.transcript import SourceRef

pytestmark = pytest.mark.unit

SRC = SourceRef(kind="kafka", topic="raw", partition=0, offset=1)


class Clock:
    def __init__(self) -> None:
        self.t = 1000.0

    def __call__(self) -> float:
        return self.t


def d(
    cid: str, turn: int, text: str, end: bool = False, **meta: object
) -> tuple[RawTurnDelta, SourceRef]:
    role = "user" if turn % 2 == 0 else "assistant"
    return (
        RawTurnDelta(
            conversation_id=cid,
            turn=turn,
            end=end,
            metadata=dict(meta),
            messages=({"role": role, "content": text},),
        ),
        SRC,
    )


async def test_closes_on_end_marker_in_turn_order() -> None:
    a = Assembler(MemoryTurnStore())
    closed, errs = await a.add([d("c", 1, "hello"), d("c", 0, "hi", agent="bot")])
    assert closed == [] and errs == []
    closed, errs = await a.add([d("c", 2, "bye", end=True, outcome={"resolved": True})])
    assert errs == [] and len(closed) == 1
    rec = closed[0].record
    assert [m["content"] for m in rec["messages"]] == ["hi", "hello", "bye"]
    assert rec["agent"] == "bot" and rec["outcome"] == {"resolved": True}
    assert rec["metadata"]["assembled"] == {"turns": 3, "closed_by": "end", "missing_turns": []}
    assert closed[0].reason == "end" and closed[0].source == SRC


async def test_redelivered_delta_is_idempotent() -> None:
    a = Assembler(MemoryTurnStore())
    await a.add([d("c", 0, "hi"), d("c", 0, "hi")])
    closed, _ = await a.add([d("c", 1, "x", end=True)])
    assert len(closed[0].record["messages"]) == 2


async def test_idle_timeout_closes_and_records_gaps() -> None:
    clock = Clock()
    a = Assembler(MemoryTurnStore(clock), AssemblyOptions(idle_timeout_s=60), clock=clock)
    await a.add([d("c", 0, "hi"), d("c", 2, "again")])
    assert await a.expired() == []
    clock.t += 61
    (done,) = await a.expired()
    assert done.reason == "idle" and done.record["metadata"]["assembled"]["missing_turns"] == [1]


async def test_restart_restores_open_conversations_from_store() -> None:
    store = MemoryTurnStore()
    a = Assembler(store)
    await a.add([d("c", 0, "hi")])
    b = Assembler(store)  # new process
    assert await b.restore() == 1
    closed, _ = await b.add([d("c", 1, "bye", end=True)])
    assert [m["content"] for m in closed[0].record["messages"]] == ["hi", "bye"]


async def test_late_turn_dead_lettered_by_default() -> None:
    store = MemoryTurnStore()
    a = Assembler(store)
    closed, _ = await a.add([d("c", 0, "hi", end=True)])
    await a.release([c.conversation_id for c in closed])
    assert store.turns == {}
    closed, errs = await Assembler(store).add([d("c", 1, "late")])
    assert closed == [] and len(errs) == 1 and isinstance(errs[0][1], LateTurnError)


async def test_late_turn_reopens_as_continuation_segment() -> None:
    store = MemoryTurnStore()
    a = Assembler(store, AssemblyOptions(late_policy="reopen"))
    closed, _ = await a.add([d("c", 0, "hi", end=True)])
    await a.release(["c"])
    closed, errs = await a.add([d("c", 1, "late", end=True)])
    assert errs == [] and closed[0].conversation_id == "c~1"
    assert closed[0].record["metadata"]["continued_from"] == "c"


async def test_redelivered_turn_after_close_is_ignored_not_late() -> None:
    store = MemoryTurnStore()
    a = Assembler(store)
    closed, _ = await a.add([d("c", 0, "hi"), d("c", 1, "bye", end=True)])
    await a.release(["c"])
    # the same process, then a restarted one, see the end marker again (offset not committed)
    for asm in (a, Assembler(store)):
        closed, errs = await asm.add([d("c", 1, "bye", end=True)])
        assert closed == [] and errs == []
    closed, errs = await Assembler(store).add([d("c", 2, "new")])
    assert len(errs) == 1 and isinstance(errs[0][1], LateTurnError)


async def test_rebalance_other_instance_sees_earlier_turns_and_idle_is_global() -> None:
    clock = Clock()
    store = MemoryTurnStore(clock)
    opts = AssemblyOptions(idle_timeout_s=60)
    first, second = Assembler(store, opts, clock), Assembler(store, opts, clock)
    await first.add([d("c", 0, "hi"), d("c", 1, "hello")])
    clock.t += 50
    # the partition moved: the second instance gets the rest
    await second.add([d("c", 2, "more")])
    clock.t += 20
    # 70 s since the first instance saw it, but only 20 s since the last delta anywhere
    assert await first.expired() == [] and await second.expired() == []
    closed, _ = await second.add([d("c", 3, "bye", end=True)])
    assert [m["content"] for m in closed[0].record["messages"]] == ["hi", "hello", "more", "bye"]
