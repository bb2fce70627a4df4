"""Postgres over TLS (Debian's PostgreSQL 15, TCP clients over TLS only, a SCRAM user):
the storage layer connects with sslmode=verify-full, and each misconfiguration (an
untrusted CA, a wrong password, a missing CA file) is one ConfigError line naming the
setting to fix."""

from __future__ import annotations

from pathlib import Path
from typing import Any
from urllib.parse import urlsplit, urlunsplit

import pytest
from pydantic import SecretStr

from rlstream.errors import ConfigError
from rlstream.settings import Settings
from rlstream.storage import Store, upgrade
from rlstream.storage.embedded import resolve_dsn

pytestmark = pytest.mark.postgres


async def _ssl_in_use(store: Store) -> bool:
    return bool(
        await store.pool.fetchval("SELECT ssl FROM pg_stat_ssl WHERE pid = pg_backend_pid()")
    )


def _other_ca(tmp_path: Path) -> Path:
    from rlstream_testkit.tls import TestCA

    return TestCA(tmp_path / "other-ca", name="some other CA").cafile


async def test_the_store_migrates_and_works_over_verify_full(postgres_tls: Any) -> None:
    dsn = postgres_tls.create_database()
    assert "sslmode=verify-full" in dsn
    settings = Settings(postgres_dsn=SecretStr(dsn))
    resolved = resolve_dsn(settings, service=True)
    assert await upgrade(resolved)
    store = await Store.connect(resolved, max_size=2)
    try:
        assert await _ssl_in_use(store)
        assert await store.ping()
    finally:
        await store.close()


async def test_the_rootcert_setting_adds_the_ca_and_verify_full(postgres_tls: Any) -> None:
    """The DSN from a Secret carries no ssl options; the CA comes from a mounted file."""
    dsn = postgres_tls.create_database()
    bare = urlunsplit(urlsplit(dsn)._replace(query=""))
    settings = Settings(postgres_dsn=SecretStr(bare), postgres_ssl_rootcert=postgres_tls.cafile)
    resolved = resolve_dsn(settings)
    assert "sslmode=verify-full" in resolved
    store = await Store.connect(resolved, max_size=1)
    try:
        assert await _ssl_in_use(store)
    finally:
        await store.close()


async def test_an_untrusted_server_certificate_is_one_config_error_line(
    postgres_tls: Any, tmp_path: Path
) -> None:
    dsn = postgres_tls.create_database()
    bare = urlunsplit(urlsplit(dsn)._replace(query=""))
    settings = Settings(postgres_dsn=SecretStr(bare), postgres_ssl_rootcert=_other_ca(tmp_path))
    for attempt in (Store.connect(resolve_dsn(settings)), upgrade(resolve_dsn(settings))):
        with pytest.raises(ConfigError) as err:
            await attempt
        msg = str(err.value)
        assert "\n" not in msg
        assert "certificate is not trusted" in msg
        assert "RLSTREAM_POSTGRES_DSN" in msg and "RLSTREAM_POSTGRES_SSL_ROOTCERT" in msg


async def test_a_wrong_password_is_one_config_error_line(postgres_tls: Any) -> None:
    postgres_tls.create_database()
    with pytest.raises(ConfigError) as err:
        await Store.connect(postgres_tls.dsn(password="not-the-password"), max_size=1)
    msg = str(err.value)
    assert "\n" not in msg
    assert msg.startswith("postgres refused the credentials in RLSTREAM_POSTGRES_DSN")
    assert "not-the-password" not in msg


async def test_a_missing_ca_file_is_one_config_error_line(
    postgres_tls: Any, tmp_path: Path
) -> None:
    dsn = postgres_tls.create_database().replace(
        str(postgres_tls.cafile), str(tmp_path / "absent.pem")
    )
    with pytest.raises(
        ConfigError,
        match=r"^RLSTREAM_POSTGRES_DSN: sslrootcert .*absent\.pem is not a readable file",
    ) as err:
        await Store.connect(dsn, max_size=1)
    assert "\n" not in str(err.value)


async def test_without_tls_the_server_refuses(postgres_tls: Any) -> None:
    """The fixture is a TLS-only server: a plaintext client is turned away, so the tests
    above passed over TLS (pg_stat_ssl says so too)."""
    dsn = postgres_tls.create_database().replace("sslmode=verify-full", "sslmode=disable")
    with pytest.raises(ConfigError, match="RLSTREAM_POSTGRES_DSN"):
        await Store.connect(dsn, max_size=1)


def test_db_cli_over_tls_with_the_ca_settings(
    postgres_tls: Any, redis_tls: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The migration hook (``rlstream db upgrade``) and ``rebuild-redis`` take the CA from
    RLSTREAM_POSTGRES_SSL_ROOTCERT / RLSTREAM_REDIS_SSL_CAFILE like the services."""
    from typer.testing import CliRunner

    from rlstream.services.cli.db import app

    bare = urlunsplit(urlsplit(postgres_tls.create_database())._replace(query=""))
    monkeypatch.setenv("RLSTREAM_POSTGRES_DSN", bare)
    monkeypatch.setenv("RLSTREAM_POSTGRES_SSL_ROOTCERT", str(postgres_tls.cafile))
    monkeypatch.setenv("RLSTREAM_REQUIRE_POSTGRES_DSN", "true")
    runner = CliRunner()
    res = runner.invoke(app, ["upgrade"])
    assert res.exit_code == 0, res.output
    monkeypatch.setenv("RLSTREAM_REDIS_URL", redis_tls.url)
    monkeypatch.setenv("RLSTREAM_REDIS_SSL_CAFILE", str(redis_tls.cafile))
    res = runner.invoke(app, ["rebuild-redis", "--namespace", "tlscli"])
    assert res.exit_code == 0 and "rebuilt 0 group counters" in res.output, res.output
    monkeypatch.setenv("RLSTREAM_REDIS_URL", redis_tls.url_for("wrong"))
    res = runner.invoke(app, ["rebuild-redis", "--namespace", "tlscli"])
    assert res.exit_code != 0
    assert res.output.strip().splitlines() == [
        "error: redis refused the user/password in RLSTREAM_REDIS_URL: invalid "
        "username-password pair or user is disabled."
    ]
