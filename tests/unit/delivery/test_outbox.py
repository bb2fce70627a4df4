from __future__ import annotations

import asyncio
from typing import Any

import pytest
from aiokafka.errors import MessageSizeTooLargeError
from test_runner import Batch

from rlstream.delivery import Outbox

pytestmark = pytest.mark.unit


class Meta:
    def partitions_for_topic(self, topic: str) -> set[int]:
        return {0, 1}

    def available_partitions_for_topic(self, topic: str) -> set[int]:
        return {0, 1}


class Producer:
    """Refuses any batch holding a value over 10 bytes; partitions by key length."""

    async def partitions_for(self, topic: str) -> set[int]:
        return {0, 1}

    def __init__(self) -> None:
        self.batches: list[tuple[str, int, list[bytes]]] = []
        self.singles: list[bytes] = []
        self._metadata = Meta()
        self.partitioned = 0

    def _partitioner(self, key: bytes | None, all_p: list[int], avail: list[int]) -> int:
        self.partitioned += 1
        return len(key or b"") % 2

    def create_batch(self) -> Batch:
        return Batch()

    def _fut(self, ok: bool) -> asyncio.Future[Any]:
        fut: asyncio.Future[Any] = asyncio.get_running_loop().create_future()
        if ok:
            fut.set_result(None)
        else:
            fut.set_exception(MessageSizeTooLargeError())
        return fut

    async def send_batch(self, batch: Batch, topic: str, *, partition: int) -> Any:
        values = [v for _, v in batch.records]
        ok = all(len(v) <= 10 for v in values)
        if ok:
            self.batches.append((topic, partition, values))
        return self._fut(ok)

    async def send(self, topic: str, value: bytes, key: bytes, headers: Any = None) -> Any:
        ok = len(value) <= 10
        if ok:
            self.singles.append(value)
        return self._fut(ok)


async def test_batches_per_partition_in_order() -> None:
    prod = Producer()
    box: Outbox[int] = Outbox(prod, "svc")  # type: ignore[arg-type]
    for i, key in enumerate([b"a", b"bb", b"c", b"dd"]):
        await box.add("out", key, f"v{i}".encode(), ref=i)
    assert await box.flush() == []
    assert sorted(prod.batches) == [("out", 0, [b"v1", b"v3"]), ("out", 1, [b"v0", b"v2"])]


async def test_refused_batch_is_resent_one_by_one_and_only_the_culprit_fails() -> None:
    prod = Producer()
    box: Outbox[str] = Outbox(prod, "svc")  # type: ignore[arg-type]
    await box.add("out", b"a", b"small", ref="ok1")
    await box.add("out", b"c", b"x" * 50, ref="big")
    await box.add("out", b"e", b"fine", ref="ok2")
    failures = await box.flush()
    assert [(ref, type(e).__name__) for ref, e in failures] == [("big", "MessageSizeTooLargeError")]
    assert prod.singles == [b"small", b"fine"]


async def test_keyed_partitions_match_aiokafka() -> None:
    from aiokafka.partitioner import DefaultPartitioner

    prod = Producer()
    real = DefaultPartitioner()
    prod._partitioner = real  # type: ignore[assignment,method-assign]
    prod._metadata.partitions_for_topic = lambda t: {0, 1, 2, 3, 4, 5}  # type: ignore[method-assign]
    prod._metadata.available_partitions_for_topic = lambda t: {0, 1, 2, 3, 4, 5}  # type: ignore[method-assign]
    keys = [f"task{i % 7}".encode() for i in range(40)]
    box: Outbox[int] = Outbox(prod, "svc")  # type: ignore[arg-type]
    for i, k in enumerate(keys):
        await box.add("keyed", k, b"v", ref=i)
    assert await box.flush() == []
    got = {p: n for _, p, n in [(t, p, len(v)) for t, p, v in prod.batches]}
    want: dict[int, int] = {}
    for k in keys:
        p = real(k, [0, 1, 2, 3, 4, 5], [0, 1, 2, 3, 4, 5])
        want[p] = want.get(p, 0) + 1
    assert got == want
