"""A required DSN never falls back to the embedded PostgreSQL (issue 19: a misnamed Secret
key used to leave each pod with a database of its own)."""

from __future__ import annotations

import pytest
from pydantic import SecretStr

from rlstream.errors import ConfigError
from rlstream.settings import Settings
from rlstream.storage.embedded import resolve_dsn

pytestmark = pytest.mark.unit


def test_a_required_dsn_that_is_missing_is_a_config_error_naming_the_key() -> None:
    with pytest.raises(ConfigError, match="key named RLSTREAM_POSTGRES_DSN"):
        resolve_dsn(Settings(require_postgres_dsn=True, postgres_dsn=None))


def test_a_required_dsn_that_is_given_is_used() -> None:
    s = Settings(require_postgres_dsn=True, postgres_dsn=SecretStr("postgresql://db/x"))
    assert resolve_dsn(s) == "postgresql://db/x"


def test_the_setting_reads_from_the_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("RLSTREAM_REQUIRE_POSTGRES_DSN", "true")
    monkeypatch.delenv("RLSTREAM_POSTGRES_DSN", raising=False)
    with pytest.raises(ConfigError):
        resolve_dsn(Settings())
