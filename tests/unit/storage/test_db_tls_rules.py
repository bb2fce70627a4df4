"""Without a DSN a service refuses to start (unless the one-pod demo asks for an embedded
database); TLS options on the DSN; connection errors as ConfigError vs TransientError."""

from __future__ import annotations

import ssl
import subprocess
import sys
from pathlib import Path

import pytest
from pydantic import SecretStr
from redis.exceptions import AuthenticationError, ResponseError
from redis.exceptions import ConnectionError as RedisConnectionError

from rlstream.errors import ConfigError, TransientError
from rlstream.settings import Settings
from rlstream.storage import embedded
from rlstream.storage.pgconnect import check_ssl_files, connect_error, tls_dsn
from rlstream.storage.redisconnect import redis_error

pytestmark = pytest.mark.unit


@pytest.fixture
def embedded_calls(monkeypatch: pytest.MonkeyPatch) -> list[Path]:
    calls: list[Path] = []

    def fake(data_dir: Path) -> str:
        calls.append(data_dir)
        return "postgresql://embedded"

    monkeypatch.setattr(embedded, "start_embedded_postgres", fake)
    return calls


def test_a_service_without_a_dsn_refuses_naming_the_setting(embedded_calls: list[Path]) -> None:
    with pytest.raises(ConfigError) as err:
        embedded.resolve_dsn(Settings(), service=True)
    assert str(err.value).startswith("RLSTREAM_POSTGRES_DSN is not set: a service needs")
    assert "RLSTREAM_EMBEDDED_POSTGRES=true" in str(err.value)
    assert embedded_calls == []


def test_the_demo_switch_and_the_cli_keep_the_embedded_default(
    embedded_calls: list[Path],
) -> None:
    assert embedded.resolve_dsn(Settings(embedded_postgres=True), service=True) == (
        "postgresql://embedded"
    )
    assert embedded.resolve_dsn(Settings()) == "postgresql://embedded"  # CLI, batch pipeline
    assert len(embedded_calls) == 2


def test_a_given_dsn_gets_the_rootcert_setting(tmp_path: Path) -> None:
    ca = tmp_path / "ca.pem"
    s = Settings(postgres_dsn=SecretStr("postgresql://u:p@db:5432/x"), postgres_ssl_rootcert=ca)
    assert embedded.resolve_dsn(s, service=True) == (
        f"postgresql://u:p@db:5432/x?sslrootcert={str(ca).replace('/', '%2F')}&sslmode=verify-full"
    )


def test_tls_dsn_keeps_what_the_dsn_says() -> None:
    ca = Path("/ca.pem")
    assert tls_dsn("postgresql://db/x", None) == "postgresql://db/x"
    own = "postgresql://db/x?sslrootcert=/mine.pem&sslmode=verify-ca"
    assert tls_dsn(own, ca) == own
    assert tls_dsn("postgresql://db/x?sslmode=require", ca) == (
        "postgresql://db/x?sslmode=require&sslrootcert=%2Fca.pem"
    )


def test_unreadable_ssl_files_name_the_option(tmp_path: Path) -> None:
    ok = tmp_path / "ca.pem"
    ok.write_text("x")
    check_ssl_files(f"postgresql://db/x?sslrootcert={ok}&sslmode=verify-full")
    with pytest.raises(ConfigError, match="sslrootcert system is not a readable file"):
        check_ssl_files("postgresql://db/x?sslrootcert=system")  # libpq's, not asyncpg's
    with pytest.raises(ConfigError, match=r"^RLSTREAM_POSTGRES_DSN: sslkey /nope\.key is not"):
        check_ssl_files("postgresql://db/x?sslkey=/nope.key")


def test_postgres_connection_errors() -> None:
    untrusted = ssl.SSLCertVerificationError(1, "certificate verify failed")
    untrusted.verify_message = "unable to get local issuer certificate"
    err = connect_error(untrusted)
    assert isinstance(err, ConfigError)
    assert "not trusted (unable to get local issuer certificate)" in str(err)
    refused = connect_error(ConnectionRefusedError(111, "Connection refused"))
    assert isinstance(refused, TransientError)
    no_tls = connect_error(ConnectionError("PostgreSQL server at db:5432 rejected SSL upgrade"))
    assert isinstance(no_tls, ConfigError)


def test_redis_connection_errors() -> None:
    assert isinstance(redis_error(AuthenticationError("invalid password")), ConfigError)
    assert isinstance(redis_error(ResponseError("NOAUTH Authentication required.")), ConfigError)
    untrusted = ssl.SSLCertVerificationError(1, "certificate verify failed")
    untrusted.verify_message = "self-signed certificate in certificate chain"
    wrapped = RedisConnectionError("Error 1 connecting to db:6380.")
    wrapped.__cause__ = untrusted
    err = redis_error(wrapped)
    assert isinstance(err, ConfigError) and "RLSTREAM_REDIS_SSL_CAFILE" in str(err)
    assert isinstance(redis_error(RedisConnectionError("Connection refused")), TransientError)


def test_a_service_process_without_a_dsn_stops_at_start_naming_it(tmp_path: Path) -> None:
    code = "import asyncio\nfrom rlstream.services.grader.app import rt\nasyncio.run(rt.start())"
    env = {
        "PATH": "/usr/bin:/bin",
        "RLSTREAM_HEALTH_PORT": "-1",
        "RLSTREAM_DATA_DIR": str(tmp_path),
    }
    out = subprocess.run(
        [sys.executable, "-c", code], env=env, capture_output=True, text=True, timeout=60
    )
    text = out.stdout + out.stderr
    assert out.returncode == 2, text
    assert "Traceback" not in text
    assert len([x for x in text.splitlines() if "RLSTREAM_POSTGRES_DSN is not set" in x]) == 1
    assert not (tmp_path / "postgres").exists()  # no embedded database was started
