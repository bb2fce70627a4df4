"""Kafka connection security, built one way for every client (consumer, producers, admin, CLI).

Why one module: a setting read by some clients and not others leaves a service that
connects with its producer and fails with its admin client. Every ``AIOKafka*`` constructor
takes :func:`client_kwargs`, the FastStream broker takes :func:`faststream_security`. TLS
comes from aiokafka's ``create_ssl_context`` and SASL from aiokafka/FastStream themselves
(no hand-written SASL). :func:`check` refuses an inconsistent combination at startup with a
:class:`~rlstream.errors.ConfigError` naming the variable to fix.
"""

from __future__ import annotations

import importlib
import ssl
from typing import TYPE_CHECKING, Any

from rlstream.errors import ConfigError
from rlstream.settings import Settings

if TYPE_CHECKING:
    from aiokafka.abc import AbstractTokenProvider
    from faststream.security import BaseSecurity

PROTOCOLS = ("PLAINTEXT", "SSL", "SASL_PLAINTEXT", "SASL_SSL")
MECHANISMS = ("PLAIN", "SCRAM-SHA-256", "SCRAM-SHA-512", "OAUTHBEARER")


def env(field: str) -> str:
    """The environment variable of a Settings field (what an operator edits)."""
    return f"RLSTREAM_{field.upper()}"


def protocol(settings: Settings) -> str:
    return settings.kafka_security_protocol.strip().upper()


def mechanism(settings: Settings) -> str:
    return settings.kafka_sasl_mechanism.strip().upper()


def uses_sasl(settings: Settings) -> bool:
    return protocol(settings).startswith("SASL_")


def uses_tls(settings: Settings) -> bool:
    return protocol(settings) in ("SSL", "SASL_SSL")


def sasl_password(settings: Settings) -> str | None:
    """The SASL password: the variable, else the mounted file (trailing newline dropped)."""
    if settings.kafka_sasl_password is not None:
        return settings.kafka_sasl_password.get_secret_value()
    path = settings.kafka_sasl_password_file
    if path is None:
        return None
    try:
        return path.read_text().rstrip("\r\n")
    except OSError as exc:
        raise ConfigError(
            f"{env('kafka_sasl_password_file')}: cannot read {path}: {exc.strerror or exc}"
        ) from exc


def check(settings: Settings) -> None:
    """Refuse a combination that cannot connect, naming the variable (called at startup)."""
    proto = protocol(settings)
    if proto not in PROTOCOLS:
        raise ConfigError(
            f"{env('kafka_security_protocol')}={settings.kafka_security_protocol!r}: "
            f"expected one of {', '.join(PROTOCOLS)}"
        )
    if uses_sasl(settings):
        mech = mechanism(settings)
        if mech not in MECHANISMS:
            raise ConfigError(
                f"{env('kafka_sasl_mechanism')}={settings.kafka_sasl_mechanism!r}: "
                f"expected one of {', '.join(MECHANISMS)}"
            )
        if mech == "OAUTHBEARER":
            if not settings.kafka_oauth_token_provider:
                raise ConfigError(
                    f"{env('kafka_sasl_mechanism')}=OAUTHBEARER needs "
                    f"{env('kafka_oauth_token_provider')} (module:attr of a token provider)"
                )
        else:
            if not settings.kafka_sasl_username:
                raise ConfigError(
                    f"{env('kafka_security_protocol')}={proto} with {mech} needs "
                    f"{env('kafka_sasl_username')}"
                )
            if not sasl_password(settings):
                raise ConfigError(
                    f"{env('kafka_security_protocol')}={proto} with {mech} needs "
                    f"{env('kafka_sasl_password')} or {env('kafka_sasl_password_file')}"
                )
    if (settings.kafka_ssl_certfile is None) != (settings.kafka_ssl_keyfile is None):
        given, missing = (
            ("kafka_ssl_certfile", "kafka_ssl_keyfile")
            if settings.kafka_ssl_keyfile is None
            else ("kafka_ssl_keyfile", "kafka_ssl_certfile")
        )
        raise ConfigError(f"{env(given)} is set but {env(missing)} is not (mTLS needs both)")
    tls_only = ("kafka_ssl_cafile", "kafka_ssl_certfile", "kafka_ssl_keyfile")
    if not uses_tls(settings):
        for name in tls_only:
            if getattr(settings, name) is not None:
                raise ConfigError(
                    f"{env(name)} is set but {env('kafka_security_protocol')}={proto} "
                    "does not use TLS (SSL or SASL_SSL)"
                )
    for name in tls_only:
        path = getattr(settings, name)
        if path is not None and not path.is_file():
            raise ConfigError(f"{env(name)}: no such file {path}")


def ssl_context(settings: Settings) -> ssl.SSLContext | None:
    """aiokafka's SSL context from the CA bundle and client cert/key (None without TLS)."""
    if not uses_tls(settings):
        return None
    from aiokafka.helpers import create_ssl_context

    key_pw = settings.kafka_ssl_key_password
    try:
        ctx: ssl.SSLContext = create_ssl_context(
            cafile=settings.kafka_ssl_cafile,
            certfile=settings.kafka_ssl_certfile,
            keyfile=settings.kafka_ssl_keyfile,
            password=key_pw.get_secret_value() if key_pw is not None else None,
        )
    except ssl.SSLError as exc:
        names = ("kafka_ssl_cafile", "kafka_ssl_certfile", "kafka_ssl_keyfile")
        raise ConfigError(
            f"kafka: TLS files unusable ({exc.reason or exc}): check "
            f"{' / '.join(env(n) for n in names)} / {env('kafka_ssl_key_password')}"
        ) from exc
    if not settings.kafka_ssl_check_hostname:
        ctx.check_hostname = False
    return ctx


def token_provider(settings: Settings) -> AbstractTokenProvider | None:
    """The OAUTHBEARER token provider named by ``module:attr`` (a class or a factory)."""
    if not uses_sasl(settings) or mechanism(settings) != "OAUTHBEARER":
        return None
    from aiokafka.abc import AbstractTokenProvider

    ref = settings.kafka_oauth_token_provider or ""
    name = env("kafka_oauth_token_provider")
    module, _, attr = ref.partition(":")
    if not module or not attr:
        raise ConfigError(f"{name}={ref!r}: expected module:attr")
    try:
        obj: Any = importlib.import_module(module)
        for part in attr.split("."):
            obj = getattr(obj, part)
    except (ImportError, AttributeError) as exc:
        raise ConfigError(f"{name}={ref!r}: cannot import it ({exc})") from exc
    try:
        provider = obj if isinstance(obj, AbstractTokenProvider) else obj()
    except ConfigError:
        raise
    except Exception as exc:  # a factory that needs arguments, or fails
        raise ConfigError(f"{name}={ref!r}: calling it failed ({exc!r})") from exc
    if not isinstance(provider, AbstractTokenProvider):
        raise ConfigError(
            f"{name}={ref!r} gave {type(provider).__name__}, not an "
            "aiokafka.abc.AbstractTokenProvider"
        )
    return provider


def client_kwargs(settings: Settings) -> dict[str, Any]:
    """Security keyword arguments for any ``AIOKafkaProducer/Consumer/AdminClient``."""
    check(settings)
    proto = protocol(settings)
    out: dict[str, Any] = {"security_protocol": proto}
    if uses_tls(settings):
        out["ssl_context"] = ssl_context(settings)
    if uses_sasl(settings):
        mech = mechanism(settings)
        out["sasl_mechanism"] = mech
        if mech == "OAUTHBEARER":
            out["sasl_oauth_token_provider"] = token_provider(settings)
        else:
            out["sasl_plain_username"] = settings.kafka_sasl_username
            out["sasl_plain_password"] = sasl_password(settings)
    return out


def faststream_security(settings: Settings) -> tuple[BaseSecurity | None, dict[str, Any]]:
    """FastStream's ``security=`` object, plus extra ``KafkaBroker`` kwargs (the OAUTHBEARER
    token provider, which FastStream takes separately)."""
    from faststream.security import (
        BaseSecurity,
        SASLOAuthBearer,
        SASLPlaintext,
        SASLScram256,
        SASLScram512,
    )

    check(settings)
    ctx = ssl_context(settings)
    tls = uses_tls(settings)
    if not uses_sasl(settings):
        return (BaseSecurity(ssl_context=ctx, use_ssl=True) if tls else None), {}
    mech = mechanism(settings)
    if mech == "OAUTHBEARER":
        security = SASLOAuthBearer(ssl_context=ctx, use_ssl=tls)
        return security, {"sasl_oauth_token_provider": token_provider(settings)}
    cls = {"PLAIN": SASLPlaintext, "SCRAM-SHA-256": SASLScram256, "SCRAM-SHA-512": SASLScram512}
    user, password = settings.kafka_sasl_username or "", sasl_password(settings) or ""
    return cls[mech](username=user, password=password, ssl_context=ctx, use_ssl=tls), {}


__all__ = [
    "MECHANISMS",
    "PROTOCOLS",
    "check",
    "client_kwargs",
    "env",
    "faststream_security",
    "sasl_password",
    "ssl_context",
    "token_provider",
]
