"""A registry promotion hot-swaps a real ``rlstream serve`` (deploy target ``serve``) on the
harness's real Kafka and PostgreSQL: after ``rlstream promote`` the server answers with the
new model id within a bounded time, a rollback restores the old one, and a corrupt adapter
keeps the old one serving (the promotion stays pending, no DeploymentEvent), after which a
rollback still goes through and the failed promotion is never deployed."""

from __future__ import annotations

import asyncio
import time
import uuid
from collections.abc import Callable
from pathlib import Path
from typing import Any

import httpx
import pytest
from aiokafka import AIOKafkaConsumer
from hotswap_helpers import corrupt_adapter, make_adapter, start_server, stop_server
from typer.testing import CliRunner

from rlstream.events import DeploymentEvent, topics
from rlstream.registry import Registry
from rlstream.services.cli.main import app
from rlstream.storage import Store, upgrade

pytestmark = [
    pytest.mark.train,
    pytest.mark.kafka,
    pytest.mark.postgres,
    pytest.mark.filterwarnings("ignore::FutureWarning"),
]

AGENT = "support"
BOUND_S = 60.0  # from `rlstream promote` to the server answering with the new id


async def _register(dsn: str, folders: list[Path]) -> list[str]:
    await upgrade(dsn)
    store = await Store.connect(dsn, max_size=2)
    try:
        reg = Registry(store)
        return [(await reg.register(f, agent=AGENT)).model_id for f in folders]
    finally:
        await store.close()


async def _state(dsn: str) -> tuple[str | None, list[str]]:
    """(the champion alias, the ids of unannounced promotions)."""
    store = await Store.connect(dsn, max_size=2)
    try:
        pending = [p.promotion_id for p in await store.unannounced_promotions()]
        return await store.get_alias(AGENT, "champion"), pending
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
        extra = await cons.getmany(timeout_ms=2000)  # nothing more than expected
        out += [DeploymentEvent.model_validate_json(r.value) for rs in extra.values() for r in rs]
    finally:
        await cons.stop()
    return out


def _answering(url: str) -> str:
    body = {"messages": [{"role": "user", "content": "hi"}], "max_tokens": 2}
    res = httpx.post(url + "/v1/chat/completions", json=body, timeout=120)
    assert res.status_code == 200, res.text
    return str(res.json()["model"])


def test_promotion_rollback_and_a_corrupt_adapter_on_a_live_server(
    base_model: Path, kafka: Any, postgres_dsn_factory: Callable[[], str], tmp_path: Path
) -> None:
    dsn = postgres_dsn_factory()
    a_dir = make_adapter(tmp_path / "a", 1)
    folders = [a_dir, make_adapter(tmp_path / "b", 2), corrupt_adapter(tmp_path / "c", a_dir)]
    a, b, bad = asyncio.run(_register(dsn, folders))
    proc, url = start_server(base_model, "m-base")
    prefix = f"t{uuid.uuid4().hex[:8]}."
    env = {
        "RLSTREAM_KAFKA_BOOTSTRAP": kafka.bootstrap,
        "RLSTREAM_TOPIC_PREFIX": prefix,
        "RLSTREAM_DEPLOY_TARGET": "serve",
        "RLSTREAM_DEPLOY_SERVE_URL": url,
        "RLSTREAM_DEPLOY_TIMEOUT_S": "120",
    }
    runner = CliRunner()

    def promote(*args: str) -> tuple[Any, float]:
        t0 = time.monotonic()
        res = runner.invoke(app, ["promote", *args, "--dsn", dsn], env=env)
        return res, time.monotonic() - t0

    try:
        assert _answering(url) == "m-base"
        took = {}
        for step, args, expect in (
            ("promote a", (a, "--override"), a),
            ("promote b", (b, "--override"), b),
            ("rollback", ("--rollback", "--agent", AGENT), a),
        ):
            res, secs = promote(*args)
            assert res.exit_code == 0, res.output
            assert "deployed to serve " + url in " ".join(res.output.split())
            assert _answering(url) == expect, step
            took[step] = secs
        assert max(took.values()) < BOUND_S, took
        print("PROMOTE_TO_SERVING_S", {k: round(v, 2) for k, v in took.items()})

        res, _ = promote(bad, "--override")  # the load fails: the old model keeps serving
        assert res.exit_code != 0
        assert "did not swap" in " ".join(res.output.split())
        assert _answering(url) == a
        alias, pending = asyncio.run(_state(dsn))
        assert alias == bad and len(pending) == 1  # committed, not announced
        failed = pending[0]
        metrics = httpx.get(url + "/metrics").text
        assert 'rlstream_serve_adapter_swaps_total{result="failed"} 1.0' in metrics

        res, _ = promote("--rollback", "--agent", AGENT)  # not blocked by the failed one
        assert res.exit_code == 0, res.output
        assert "did not deploy" in " ".join(res.output.split())
        assert _answering(url) == a
        assert asyncio.run(_state(dsn)) == (a, [failed])
        res, _ = promote(b, "--override")  # later announcements skip the superseded one
        assert res.exit_code == 0, res.output
        assert _answering(url) == b
        assert asyncio.run(_state(dsn)) == (b, [])
    finally:
        stop_server(proc)
    events = asyncio.run(_events(kafka.bootstrap, prefix + topics.DEPLOYMENTS, 5))
    assert [(e.kind, e.model_id) for e in events] == [
        ("promote", a), ("promote", b), ("rollback", a), ("rollback", a), ("promote", b),
    ]  # fmt: skip
    assert all(e.target == "serve" and e.target_ref == url for e in events)
    assert bad not in {e.model_id for e in events}
