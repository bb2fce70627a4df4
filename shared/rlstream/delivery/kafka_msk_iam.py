"""OAUTHBEARER tokens for Amazon MSK's IAM authentication (optional extra ``msk-iam``).

Set ``RLSTREAM_KAFKA_SECURITY_PROTOCOL=SASL_SSL``, ``RLSTREAM_KAFKA_SASL_MECHANISM=OAUTHBEARER``
and ``RLSTREAM_KAFKA_OAUTH_TOKEN_PROVIDER=rlstream.delivery.kafka_msk_iam:MSKIAMTokenProvider``.
The token is AWS's own signer (``aws-msk-iam-sasl-signer-python``) over the default
credential chain (IRSA web identity, instance role, environment), for ``AWS_REGION``. Why a
cache: every new broker connection asks for a token, and signing reads credentials.
"""

from __future__ import annotations

import asyncio
import os
import time

from aiokafka.abc import AbstractTokenProvider

from rlstream.errors import ConfigError

#: renew this long before the token's expiry (tokens live 15 minutes)
RENEW_BEFORE_S = 60.0


class MSKIAMTokenProvider(AbstractTokenProvider):  # type: ignore[misc]
    """A cached, self-renewing MSK IAM token for ``region`` (default ``AWS_REGION``)."""

    def __init__(self, region: str | None = None) -> None:
        region = region or os.environ.get("AWS_REGION") or os.environ.get("AWS_DEFAULT_REGION")
        if not region:
            raise ConfigError("MSK IAM: set AWS_REGION (the cluster's region)")
        try:
            from aws_msk_iam_sasl_signer import MSKAuthTokenProvider
        except ImportError as exc:
            raise ConfigError(
                "MSK IAM needs aws-msk-iam-sasl-signer-python: install rlstream[msk-iam]"
            ) from exc
        self.region = region
        self._signer = MSKAuthTokenProvider
        self._token: str | None = None
        self._expires_at = 0.0
        self._lock = asyncio.Lock()

    async def token(self) -> str:
        async with self._lock:
            if self._token is None or time.time() > self._expires_at - RENEW_BEFORE_S:
                tok, expiry_ms = await asyncio.to_thread(
                    self._signer.generate_auth_token, self.region
                )
                self._token, self._expires_at = str(tok), float(expiry_ms) / 1000
            return self._token


__all__ = ["MSKIAMTokenProvider"]
