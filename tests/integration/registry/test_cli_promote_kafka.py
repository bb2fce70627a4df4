"""``rlstream promote`` with RLSTREAM_KAFKA_BOOTSTRAP set publishes its DeploymentEvent on
real Kafka (event id = promotion id), and a rollback publishes its own."""

from __future__ import annotations

import asyncio
import uuid
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from aiokafka import AIOKafkaConsumer
from registry_helpers import fake_adapter
from typer.testing import CliRunner

from rlstream.events import DeploymentEvent, topics
from rlstream.registry import Registry
from rlstream.services.cli.main import app
from rlstream.storage import Store, upgrade

pytestmark = [pytest.mark.kafka, pytest.mark.postgres]


async def _register(dsn: str, tmp: Path) -> list[str]:
    await upgrade(dsn)
    store = await Store.connect(dsn, max_size=2)
    try:
        reg = Registry(store)
        return [
            (await reg.register(fake_adapter(tmp, n), agent="support")).model_id for n in ("a", "b")
        ]
    finally:
        await store.close()


async def _events(bootstrap: str, topic: str, n: int) -> list[DeploymentEvent]:
    cons = AIOKafkaConsumer(topic, bootstrap_servers=bootstrap, auto_offset_reset="earliest")
    await cons.start()
    out: list[DeploymentEvent] = []
    try:
        async with asyncio.timeout(60):
            while len(out) < n:
                batch = await cons.getmany(timeout_ms=500)
                out += [
                    DeploymentEvent.model_validate_json(r.value)
                    for rs in batch.values()
                    for r in rs
                ]
    finally:
        await cons.stop()
    return out


def test_promote_and_rollback_publish_deployment_events(
    kafka: Any, postgres_dsn_factory: Callable[[], str], tmp_path: Path
) -> None:
    dsn = postgres_dsn_factory()
    a, b = asyncio.run(_register(dsn, tmp_path))
    prefix = f"t{uuid.uuid4().hex[:8]}."
    env = {"RLSTREAM_KAFKA_BOOTSTRAP": kafka.bootstrap, "RLSTREAM_TOPIC_PREFIX": prefix}
    runner = CliRunner()
    for args in ([a, "--override"], [b, "--override"], ["--rollback", "--agent", "support"]):
        res = runner.invoke(app, ["promote", *args, "--dsn", dsn], env=env)
        assert res.exit_code == 0, res.output
        assert "published" in res.output and "not published" not in res.output
    events = asyncio.run(_events(kafka.bootstrap, prefix + topics.DEPLOYMENTS, 3))
    assert [(e.kind, e.model_id, e.previous_model_id) for e in events] == [
        ("promote", a, None), ("promote", b, a), ("rollback", a, b),
    ]  # fmt: skip
    assert len({e.event_id for e in events}) == 3
    assert all(e.event_id == e.promotion_id and e.target == "none" for e in events)
