"""``rlstream serve MODEL`` with a registry reference: the adapter, base model and model id
(the id every served conversation is tagged with) come from the real PostgreSQL registry."""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from pathlib import Path

import pytest
from registry_helpers import fake_adapter

from rlstream.errors import RlstreamError
from rlstream.registry import Registry
from rlstream.services.cli.servehttp.resolve import resolve
from rlstream.storage import Store, upgrade

pytestmark = pytest.mark.postgres


async def _register(dsn: str, adapter: Path, base: Path) -> str:
    await upgrade(dsn)
    store = await Store.connect(dsn, max_size=2)
    try:
        rec = await Registry(store).register(adapter, agent="support-bot", base_model=str(base))
    finally:
        await store.close()
    return rec.model_id


def test_registry_id_prefix_gives_adapter_base_and_model_id(
    postgres_dsn_factory: Callable[[], str], tmp_path: Path
) -> None:
    dsn = postgres_dsn_factory()
    base = tmp_path / "base"
    base.mkdir()
    adapter = fake_adapter(tmp_path, "adapter-a")
    model_id = asyncio.run(_register(dsn, adapter, base))
    got_base, got_adapter, got_id = resolve(model_id[:12], "support-bot", dsn, None)
    assert (got_base, got_adapter, got_id) == (base, adapter, model_id)
    assert resolve(model_id[:12], None, dsn, "pinned")[2] == "pinned"
    with pytest.raises(RlstreamError):
        resolve("champion", "support-bot", dsn, None)  # no champion promoted yet
