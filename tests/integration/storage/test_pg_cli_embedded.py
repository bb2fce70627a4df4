"""``rlstream db`` commands and the embedded PostgreSQL default."""

from __future__ import annotations

import asyncio
import secrets
import shutil
import tempfile
from collections.abc import Callable
from pathlib import Path

import pytest
from typer.testing import CliRunner

from rlstream.services.cli.db import app
from rlstream.storage import (
    RedisState,
    Store,
    latest_version,
    start_embedded_postgres,
    stop_embedded_postgres,
    upgrade,
)
from rlstream.storage.embedded import ensure_runtime_dir

pytestmark = pytest.mark.postgres

runner = CliRunner()


def test_db_upgrade_and_current(postgres_dsn_factory: Callable[[], str]) -> None:
    dsn = postgres_dsn_factory()
    before = runner.invoke(app, ["current", "--dsn", dsn])
    assert before.exit_code == 1 and "schema none" in before.output
    first = runner.invoke(app, ["upgrade", "--dsn", dsn])
    assert first.exit_code == 0, first.output
    assert f"schema at {latest_version():04d}" in first.output and "applied 0001" in first.output
    again = runner.invoke(app, ["upgrade", "--dsn", dsn])
    assert "nothing to apply" in again.output
    now = runner.invoke(app, ["current", "--dsn", dsn])
    assert now.exit_code == 0 and "0 pending" in now.output


@pytest.mark.redis
def test_db_rebuild_redis(postgres_dsn_factory: Callable[[], str], redis_url: str) -> None:
    from storage_helpers import make_rollout, make_transcript

    dsn = postgres_dsn_factory()

    async def seed() -> None:
        await upgrade(dsn)
        store = await Store.connect(dsn)
        await store.save_rollouts([make_rollout(make_transcript(f"cli{i}")) for i in range(3)])
        await store.close()

    asyncio.run(seed())
    ns = f"cli{secrets.token_hex(4)}"
    args = ["rebuild-redis", "--dsn", dsn, "--redis-url", redis_url, "--namespace", ns]
    res = runner.invoke(app, args)
    assert res.exit_code == 0, res.output
    assert "1 group counters, 3 rollout markers" in res.output

    async def check() -> None:
        state = RedisState.from_url(redis_url, namespace=ns)
        try:
            (g,) = await state.groups("support", "outcome@1")
            assert (g.n, g.passes) == (3, 3)
        finally:
            await state.clear()
            await state.close()

    asyncio.run(check())
    missing = runner.invoke(app, ["rebuild-redis", "--dsn", dsn], env={"RLSTREAM_REDIS_URL": ""})
    assert missing.exit_code == 2


async def test_embedded_postgres_starts_once_and_migrates() -> None:
    # not under pytest's tmp_path: the server runs as another user and must traverse it
    base = Path(tempfile.mkdtemp(prefix="rlstream-embedded-"))
    base.chmod(0o755)
    try:
        dsn = start_embedded_postgres(base)
        assert "host=" in dsn
        assert start_embedded_postgres(base) == dsn  # reused, not restarted
        assert await upgrade(dsn) == list(range(1, latest_version() + 1))
        store = await Store.connect(dsn)
        try:
            assert await store.pool.fetchval("SELECT count(*) FROM rollouts") == 0
        finally:
            await store.close()
    finally:
        stop_embedded_postgres(base)
        shutil.rmtree(base, ignore_errors=True)
    assert not (base / "postgres").exists()


def test_runtime_dir_is_made_private(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    loose = tmp_path / "xdg"
    loose.mkdir(mode=0o755)
    loose.chmod(0o755)
    monkeypatch.setenv("XDG_RUNTIME_DIR", str(loose))
    path = ensure_runtime_dir()
    assert path != loose and (path.stat().st_mode & 0o777) == 0o700
    monkeypatch.setenv("XDG_RUNTIME_DIR", str(path))
    assert ensure_runtime_dir() == path
