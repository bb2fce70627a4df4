"""Connecting to Postgres: TLS options on the DSN, and connection errors as one clear line.

Why: asyncpg honours ``sslmode``, ``sslrootcert``, ``sslcert`` and ``sslkey`` in the DSN
(libpq's names), so ``?sslmode=verify-full&sslrootcert=/etc/rlstream/pg-ca.pem`` is all
TLS needs; ``RLSTREAM_POSTGRES_SSL_ROOTCERT`` adds the CA when the DSN lives in a Secret
and the CA in a mounted volume. An untrusted certificate, a missing CA file or a refused
password is a configuration error naming the setting to fix, not a retryable outage.
"""

from __future__ import annotations

import os
import ssl
from pathlib import Path
from typing import Any
from urllib.parse import parse_qsl, urlencode, urlsplit, urlunsplit

import asyncpg

from rlstream.errors import ConfigError, RlstreamError, TransientError

DSN = "RLSTREAM_POSTGRES_DSN"
ROOTCERT = "RLSTREAM_POSTGRES_SSL_ROOTCERT"


def tls_dsn(dsn: str, rootcert: Path | None) -> str:
    """``dsn`` with ``sslrootcert=rootcert`` (and ``sslmode=verify-full`` unless it names
    an sslmode); unchanged when ``rootcert`` is None or the DSN has its own sslrootcert."""
    if rootcert is None:
        return dsn
    parts = urlsplit(dsn)
    query = parse_qsl(parts.query, keep_blank_values=True)
    keys = {k for k, _ in query}
    if "sslrootcert" in keys:
        return dsn
    query.append(("sslrootcert", str(rootcert)))
    if "sslmode" not in keys:
        query.append(("sslmode", "verify-full"))
    return urlunsplit(parts._replace(query=urlencode(query)))


def check_ssl_files(dsn: str) -> None:
    """ConfigError naming the option when a file the DSN's ssl options name is not
    readable (asyncpg reports it as a bare ``FileNotFoundError``, without the name)."""
    for key, value in parse_qsl(urlsplit(dsn).query):
        if key in ("sslrootcert", "sslcert", "sslkey"):  # asyncpg has no "system"
            path = Path(value).expanduser()
            if not path.is_file() or not os.access(path, os.R_OK):
                where = ROOTCERT if key == "sslrootcert" else DSN
                raise ConfigError(f"{DSN}: {key} {path} is not a readable file (see {where})")


def connect_error(exc: BaseException) -> RlstreamError:
    """The error to raise for a failed connection: ConfigError when retrying cannot help."""
    if isinstance(exc, ssl.SSLCertVerificationError):
        return ConfigError(
            f"postgres TLS: the server certificate is not trusted ({exc.verify_message}): "
            f"check the CA (sslrootcert in {DSN}, or {ROOTCERT}) and the host name in {DSN}"
        )
    if isinstance(exc, ssl.SSLError):
        return ConfigError(f"postgres TLS failed ({exc.reason}): check the ssl* options of {DSN}")
    if isinstance(exc, asyncpg.ClientConfigurationError):
        first = str(exc).splitlines()[0] if str(exc) else type(exc).__name__
        return ConfigError(f"{DSN} (or {ROOTCERT}): {first}")
    if isinstance(
        exc, asyncpg.InvalidPasswordError | asyncpg.InvalidAuthorizationSpecificationError
    ):
        return ConfigError(f"postgres refused the credentials in {DSN}: {exc}")
    if isinstance(exc, asyncpg.InvalidCatalogNameError):
        return ConfigError(f"the database named in {DSN} does not exist: {exc}")
    if isinstance(exc, ConnectionError) and "rejected SSL upgrade" in str(exc):
        return ConfigError(f"the postgres server does not offer TLS, which {DSN} requires")
    return TransientError(f"cannot connect to postgres: {exc}")


#: what :func:`connect_error` translates (anything else propagates as it is)
CONNECT_ERRORS: tuple[type[BaseException], ...] = (
    OSError,
    asyncpg.CannotConnectNowError,
    asyncpg.ClientConfigurationError,
    asyncpg.InvalidPasswordError,
    asyncpg.InvalidAuthorizationSpecificationError,
    asyncpg.InvalidCatalogNameError,
)


async def connect(dsn: str, **kwargs: Any) -> asyncpg.Connection:
    """One connection (migrations, checks), with :func:`connect_error`'s errors."""
    check_ssl_files(dsn)
    try:
        return await asyncpg.connect(dsn, **kwargs)
    except CONNECT_ERRORS as exc:
        raise connect_error(exc) from exc
