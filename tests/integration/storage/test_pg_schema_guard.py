"""A database newer than the code is refused (a rollback across a migration), and a process
told not to migrate (the chart's hook Job does it) refuses a schema it would have to migrate.
Through the real start path of a service (Runtime.start, and a `faststream run` process:
one log line, exit 2) and the `rlstream db` CLI."""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

import asyncpg
import pytest
from pydantic import SecretStr
from typer.testing import CliRunner

from rlstream.delivery.runtime import Runtime, ServiceSettings
from rlstream.errors import ConfigError
from rlstream.services.cli.db import app
from rlstream.storage import (
    SchemaBehindError,
    SchemaNewerError,
    check_schema,
    current,
    latest_version,
    prepare_schema,
    upgrade,
)
from rlstream_testkit.stack import TEST_PII_KEY

pytestmark = pytest.mark.postgres

runner = CliRunner()


async def _add_future_migration(dsn: str) -> int:
    """What a newer release's migration leaves behind: a version this code does not know."""
    future = latest_version() + 1
    conn = await asyncpg.connect(dsn)
    try:
        await conn.execute(
            "INSERT INTO schema_migrations (version, name, sha256) VALUES ($1, 'future', 'x')",
            future,
        )
    finally:
        await conn.close()
    return future


class Refused(Exception):
    pass


async def _service_start(dsn: str, migrate: bool, bootstrap: str) -> None:
    """Runtime.start up to its refusal (which would end the process: raised here)."""
    settings = ServiceSettings(
        postgres_dsn=dsn, health_port=-1, migrate_on_start=migrate, kafka_bootstrap=bootstrap,
        pii_key=SecretStr(TEST_PII_KEY),
    )  # fmt: skip
    rt = Runtime("ingest", settings)

    def refuse(exc: Exception) -> None:
        raise Refused(str(exc)) from exc

    rt.refuse_start = refuse  # type: ignore[method-assign]
    try:
        await rt.start()
    finally:
        if rt.store is not None:
            await rt.store.close()
        if rt.producer is not None:
            await rt.producer.stop()


async def test_a_newer_schema_is_refused_with_one_line(
    postgres_dsn_factory: Callable[[], str], kafka_bootstrap: str
) -> None:
    dsn = postgres_dsn_factory()
    await upgrade(dsn)
    future = await _add_future_migration(dsn)
    for call in (upgrade(dsn), check_schema(dsn), prepare_schema(dsn, migrate=False)):
        with pytest.raises(SchemaNewerError) as info:
            await call
        assert isinstance(info.value, ConfigError)
        msg = str(info.value)
        assert "\n" not in msg and f"{future:04d}" in msg and f"{latest_version():04d}" in msg
    # a service (either mode) stops at start, before any Kafka client exists
    for migrate in (True, False):
        with pytest.raises(Refused, match="schema is newer than this code"):
            await _service_start(dsn, migrate, kafka_bootstrap)
    assert await current(dsn) == future  # nothing was changed or rolled back


async def test_no_migrate_mode_checks_only(
    postgres_dsn_factory: Callable[[], str], kafka_bootstrap: str
) -> None:
    dsn = postgres_dsn_factory()
    with pytest.raises(SchemaBehindError, match="RLSTREAM_MIGRATE_ON_START"):
        await check_schema(dsn)
    with pytest.raises(Refused, match="RLSTREAM_MIGRATE_ON_START") as info:
        await _service_start(dsn, False, kafka_bootstrap)
    assert "\n" not in str(info.value)
    conn = await asyncpg.connect(dsn)
    try:  # it did not create anything: not even the bookkeeping table
        assert not await conn.fetchval("SELECT to_regclass('schema_migrations') IS NOT NULL")
    finally:
        await conn.close()
    await upgrade(dsn)  # what the hook Job does
    assert await check_schema(dsn) == latest_version()
    await prepare_schema(dsn, migrate=False)


def test_db_upgrade_cli_refuses_a_newer_schema(postgres_dsn_factory: Callable[[], str]) -> None:
    import asyncio

    dsn = postgres_dsn_factory()
    assert runner.invoke(app, ["upgrade", "--dsn", dsn]).exit_code == 0
    future = asyncio.run(_add_future_migration(dsn))
    res = runner.invoke(app, ["upgrade", "--dsn", dsn])
    assert res.exit_code != 0
    assert "schema is newer than this code" in res.output and f"{future:04d}" in res.output
    assert "Traceback" not in res.output


def test_db_upgrade_cli_with_required_dsn_never_embeds(monkeypatch: pytest.MonkeyPatch) -> None:
    """The hook Job sets RLSTREAM_REQUIRE_POSTGRES_DSN: a misnamed Secret key must not
    migrate an embedded database in the hook's pod and report success."""
    monkeypatch.delenv("RLSTREAM_POSTGRES_DSN", raising=False)
    monkeypatch.setenv("RLSTREAM_REQUIRE_POSTGRES_DSN", "true")
    res = runner.invoke(app, ["upgrade"])
    assert res.exit_code != 0 and "RLSTREAM_POSTGRES_DSN is not set" in res.output


async def test_a_service_process_refuses_with_one_line_and_exit_2(
    postgres_dsn_factory: Callable[[], str], kafka_bootstrap: str
) -> None:
    """What a pod's log shows: the one line, no traceback; the exit makes it CrashLoop."""
    dsn = postgres_dsn_factory()
    await upgrade(dsn)
    future = await _add_future_migration(dsn)
    env = {k: v for k, v in os.environ.items() if not k.startswith("RLSTREAM_")}
    env.update(
        RLSTREAM_POSTGRES_DSN=dsn, RLSTREAM_KAFKA_BOOTSTRAP=kafka_bootstrap,
        RLSTREAM_HEALTH_PORT="-1", RLSTREAM_MIGRATE_ON_START="false",
        RLSTREAM_PII_KEY=TEST_PII_KEY,
    )  # fmt: skip
    faststream = str(Path(sys.executable).parent / "faststream")
    res = subprocess.run(
        [faststream, "run", "rlstream.services.ingest.app:app"],
        env=env, capture_output=True, text=True, timeout=120,
    )  # fmt: skip
    out = res.stdout + res.stderr
    assert res.returncode == 2, out
    assert "Traceback" not in out
    [line] = [x for x in out.splitlines() if "schema is newer" in x]
    assert f"{future:04d}" in line
