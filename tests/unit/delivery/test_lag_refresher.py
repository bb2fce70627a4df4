"""LagRefresher: end minus committed per assigned partition; the beginning when nothing
is committed; series of partitions no longer assigned are dropped."""

from __future__ import annotations

from typing import Any

import pytest
from aiokafka import TopicPartition
from prometheus_client import REGISTRY

from rlstream.delivery.lag import LagRefresher

pytestmark = pytest.mark.unit


class FakeConsumer:
    def __init__(self) -> None:
        self.assigned = {TopicPartition("t", 0), TopicPartition("t", 1)}
        self.ends = {TopicPartition("t", 0): 10, TopicPartition("t", 1): 7}
        self.commits: dict[Any, int | None] = {TopicPartition("t", 0): 4}

    def assignment(self) -> set[TopicPartition]:
        return set(self.assigned)

    async def end_offsets(self, tps: list[TopicPartition]) -> dict[TopicPartition, int]:
        return {tp: self.ends[tp] for tp in tps}

    async def beginning_offsets(self, tps: list[TopicPartition]) -> dict[TopicPartition, int]:
        return dict.fromkeys(tps, 2)

    async def committed(self, tp: TopicPartition) -> int | None:
        return self.commits.get(tp)


def _lag(part: int) -> float | None:
    return REGISTRY.get_sample_value(
        "rlstream_consumer_lag", {"service": "unitlag", "topic": "t", "partition": str(part)}
    )


async def test_tick_sets_and_drops_series() -> None:
    fake = FakeConsumer()
    ref = LagRefresher("unitlag", lambda: fake)
    assert await ref.tick() == {("t", 0): 6, ("t", 1): 5}
    assert (_lag(0), _lag(1)) == (6, 5)
    fake.ends[TopicPartition("t", 0)] = 15  # produced, nothing consumed: the gauge follows
    fake.assigned = {TopicPartition("t", 0)}  # partition 1 went to another pod
    await ref.tick()
    assert (_lag(0), _lag(1)) == (11, None)


async def test_no_consumer_yet_is_nothing() -> None:
    assert await LagRefresher("unitlag2", lambda: None).tick() == {}
