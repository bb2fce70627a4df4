"""Fixtures for the registry tests: a migrated fresh database and a registry over it."""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable

import pytest
from registry_helpers import RecordingSink

from rlstream.registry import Registry
from rlstream.storage import Store, upgrade


@pytest.fixture
async def store(postgres_dsn_factory: Callable[[], str]) -> AsyncIterator[Store]:
    dsn = postgres_dsn_factory()
    await upgrade(dsn)
    s = await Store.connect(dsn, max_size=8)
    try:
        yield s
    finally:
        await s.close()


@pytest.fixture
def sink() -> RecordingSink:
    return RecordingSink()


@pytest.fixture
def registry(store: Store, sink: RecordingSink) -> Registry:
    return Registry(store, sink=sink)
