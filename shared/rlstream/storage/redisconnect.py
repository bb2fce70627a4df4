"""Redis clients over TLS with an ACL user, and their connection errors as one clear line.

Why: redis-py reads the user and password from ``redis://user:password@host`` and TLS
from ``rediss://`` (``?ssl_ca_certs=/path`` works in the URL too), so the URL in the
Secret says it all; ``RLSTREAM_REDIS_SSL_CAFILE`` adds the CA when that lives in a mounted
volume. A refused password or an untrusted certificate must stop a service at start with
the setting's name, not surface later as a retried "connection error" per batch.
"""

from __future__ import annotations

import ssl
from pathlib import Path

from redis.asyncio import Redis
from redis.exceptions import AuthenticationError, ResponseError

from rlstream.errors import ConfigError, RlstreamError, TransientError

URL = "RLSTREAM_REDIS_URL"
CAFILE = "RLSTREAM_REDIS_SSL_CAFILE"


def redis_client(url: str, cafile: Path | None = None) -> Redis:
    """A client for ``url``; ``cafile`` (a ``rediss://`` URL only) is the CA to trust."""
    if cafile is None:
        return Redis.from_url(url)
    if not url.startswith("rediss://"):
        raise ConfigError(f"{CAFILE} is set but {URL} is not a rediss:// (TLS) URL")
    if not cafile.is_file():
        raise ConfigError(f"{CAFILE}: no such file {cafile}")
    return Redis.from_url(url, ssl_ca_certs=str(cafile))


def _ssl_cause(exc: BaseException) -> ssl.SSLError | None:
    seen: BaseException | None = exc
    while seen is not None:
        if isinstance(seen, ssl.SSLError):
            return seen
        seen = seen.__cause__ or seen.__context__
    return None


def redis_error(exc: BaseException) -> RlstreamError:
    """ConfigError when retrying cannot help (credentials, TLS trust), else TransientError."""
    if isinstance(exc, AuthenticationError) or (
        isinstance(exc, ResponseError) and str(exc).startswith(("WRONGPASS", "NOAUTH", "NOPERM"))
    ):
        return ConfigError(f"redis refused the user/password in {URL}: {exc}")
    cause = _ssl_cause(exc)
    if isinstance(cause, ssl.SSLCertVerificationError):
        return ConfigError(
            f"redis TLS: the server certificate is not trusted ({cause.verify_message}): "
            f"check {CAFILE} (or ssl_ca_certs in {URL}) and the host name in {URL}"
        )
    if cause is not None:
        return ConfigError(f"redis TLS failed ({cause.reason}): check {URL} and {CAFILE}")
    return TransientError(f"cannot reach redis: {exc}")
