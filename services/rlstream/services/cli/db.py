"""``rlstream db``: migrate the system of record and rebuild Redis from it."""

from __future__ import annotations

import asyncio
from pathlib import Path

import typer

from rlstream.errors import ConfigError
from rlstream.services.cli.common import friendly_errors, out
from rlstream.settings import Settings, load_settings
from rlstream.storage import (
    RedisState,
    Store,
    current,
    latest_version,
    rebuild_from_postgres,
    start_embedded_postgres,
    upgrade,
)
from rlstream.storage.embedded import resolve_dsn

app = typer.Typer(
    name="db",
    help="Postgres migrations and Redis rebuild.",
    no_args_is_help=True,
    pretty_exceptions_enable=False,
)

DsnOpt = typer.Option(
    None, "--dsn", help="Postgres DSN (default: RLSTREAM_POSTGRES_DSN, else embedded)"
)
DataDirOpt = typer.Option(None, "--data-dir", help="where the embedded PostgreSQL keeps its data")


def _dsn(dsn: str | None, data_dir: Path | None, settings: Settings) -> str:
    if dsn:
        return dsn
    if settings.postgres_dsn is not None or settings.require_postgres_dsn:
        # the DSN with RLSTREAM_POSTGRES_SSL_ROOTCERT; or, for the chart's hook Job, the
        # ConfigError naming the missing key (never migrate a private DB)
        return resolve_dsn(settings)
    return start_embedded_postgres(data_dir or settings.data_dir)


@app.command("upgrade")
@friendly_errors
def upgrade_cmd(dsn: str | None = DsnOpt, data_dir: Path | None = DataDirOpt) -> None:
    """Apply pending migrations (safe to run from several processes at once; the chart's
    pre-install/pre-upgrade hook Job runs this). A schema newer than this code is refused."""
    target = _dsn(dsn, data_dir, load_settings())
    applied = asyncio.run(upgrade(target))
    version = asyncio.run(current(target))
    if applied:
        out.print(f"applied {', '.join(f'{v:04d}' for v in applied)}; schema at {version:04d}")
    else:
        out.print(f"schema at {version:04d}, nothing to apply")


@app.command("current")
@friendly_errors
def current_cmd(dsn: str | None = DsnOpt, data_dir: Path | None = DataDirOpt) -> None:
    """Print the applied schema version and whether migrations are pending."""
    version = asyncio.run(current(_dsn(dsn, data_dir, load_settings())))
    latest = latest_version()
    shown = "none" if version is None else f"{version:04d}"
    pending = latest - (version or 0)
    out.print(f"schema {shown}, latest {latest:04d}, {pending} pending")
    if pending:
        raise typer.Exit(1)


async def _rebuild(dsn: str, redis_url: str, namespace: str, cafile: Path | None) -> str:
    store = await Store.connect(dsn, max_size=2)
    state = RedisState.from_url(redis_url, namespace=namespace, cafile=cafile)
    try:
        await state.check()  # a refused password or certificate: one line naming the setting
        async with state.locks.hold("rebuild-redis", ttl_ms=600_000):
            report = await rebuild_from_postgres(store, state)
    finally:
        await state.close()
        await store.close()
    return (
        f"rebuilt {report.groups} group counters, {report.rollout_markers} rollout markers,"
        f" {report.idempotency_keys} idempotency keys"
    )


@app.command("rebuild-redis")
@friendly_errors
def rebuild_redis_cmd(
    dsn: str | None = DsnOpt,
    data_dir: Path | None = DataDirOpt,
    redis_url: str | None = typer.Option(None, "--redis-url", help="default: RLSTREAM_REDIS_URL"),
    namespace: str = typer.Option("rlstream", "--namespace", help="Redis key prefix"),
) -> None:
    """Restore Redis state (group counters, idempotency keys) from Postgres."""
    settings = load_settings()
    url = redis_url or (settings.redis_url.get_secret_value() if settings.redis_url else None)
    if not url:
        raise ConfigError("no Redis configured: pass --redis-url or set RLSTREAM_REDIS_URL")
    target = _dsn(dsn, data_dir, settings)
    out.print(asyncio.run(_rebuild(target, url, namespace, settings.redis_ssl_cafile)))
