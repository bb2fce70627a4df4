"""``rlstream retention run`` on a real Postgres: --dry-run counts and removes nothing, a
run removes what expired, RLSTREAM_RETENTION_*=0 keeps a kind."""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from pathlib import Path

import pytest
from storage_helpers import make_rollout, make_transcript
from typer.testing import CliRunner

from rlstream.services.cli.main import app
from rlstream.storage import Store, upgrade

pytestmark = pytest.mark.postgres
runner = CliRunner()


async def _seed(dsn: str) -> None:
    await upgrade(dsn)
    store = await Store.connect(dsn, max_size=2)
    try:
        rs = [make_rollout(make_transcript(f"cli-{i}", task_key=f"k{i}")) for i in range(3)]
        await store.save_rollouts(rs)
        await store.pool.execute(
            "UPDATE rollouts SET created_at = now() - interval '40 days'"
            " WHERE conversation_id IN ('cli-0', 'cli-1')"
        )
        await store.append_turns("buf", [{"role": "user", "content": "hi"}])
        await store.close_buffer("buf")
        await store.pool.execute("UPDATE turn_buffers SET closed_at = now() - interval '8 days'")
    finally:
        await store.close()


async def _count(dsn: str, table: str) -> int:
    store = await Store.connect(dsn, max_size=1)
    try:
        return int(await store.pool.fetchval(f"SELECT count(*) FROM {table}"))
    finally:
        await store.close()


def test_retention_run_dry_run_then_for_real(
    postgres_dsn_factory: Callable[[], str], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    dsn = postgres_dsn_factory()
    asyncio.run(_seed(dsn))
    monkeypatch.setenv("RLSTREAM_DATA_DIR", str(tmp_path))
    args = ["retention", "run", "--dsn", dsn]

    dry = runner.invoke(app, [*args, "--dry-run"])
    assert dry.exit_code == 0, dry.output
    assert "turn_buffers: would remove 1 closed turn buffer(s)" in dry.output
    assert "pending_rollouts: would remove 2 pending rollout(s)" in dry.output
    assert "dry run: nothing was removed" in dry.output
    assert asyncio.run(_count(dsn, "rollouts")) == 3
    assert asyncio.run(_count(dsn, "turn_buffers")) == 1

    monkeypatch.setenv("RLSTREAM_RETENTION_PENDING_ROLLOUTS_S", "0")
    keep = runner.invoke(app, args)
    assert keep.exit_code == 0, keep.output
    assert "pending_rollouts: kept for ever" in keep.output
    assert "turn_buffers: removed 1 closed turn buffer(s)" in keep.output
    assert asyncio.run(_count(dsn, "rollouts")) == 3
    assert asyncio.run(_count(dsn, "turn_buffers")) == 0

    monkeypatch.delenv("RLSTREAM_RETENTION_PENDING_ROLLOUTS_S")
    real = runner.invoke(app, args)
    assert real.exit_code == 0, real.output
    assert "pending_rollouts: removed 2 pending rollout(s)" in real.output
    assert asyncio.run(_count(dsn, "rollouts")) == 1


def test_retention_run_refuses_a_database_it_did_not_migrate(
    postgres_dsn_factory: Callable[[], str],
) -> None:
    res = runner.invoke(app, ["retention", "run", "--dsn", postgres_dsn_factory()])
    assert res.exit_code != 0
    assert res.output.splitlines()[-1].startswith("error")
