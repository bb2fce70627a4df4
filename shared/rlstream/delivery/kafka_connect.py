"""One clear line for a Kafka connection that cannot work, and a patient wait for it.

Why: aiokafka reports a refused password or an untrusted certificate as "Unable to
bootstrap" after logging the cause at its own level, once per attempt; an operator then
reads tracebacks in a crash loop. :func:`diagnose` opens one connection exactly as every
client does (same kwargs from :mod:`.kafka_security`), authenticates, asks for metadata,
and turns the failure into one line naming the variable to check. :func:`wait_for_kafka`
retries with backoff and logs that line again only when it changes or once a minute.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import ssl
import time
from collections.abc import Callable
from typing import Any

from rlstream.delivery.kafka_security import client_kwargs, env, protocol, uses_tls
from rlstream.errors import ConfigError
from rlstream.settings import Settings

log = logging.getLogger("rlstream.kafka")

_CERT_ALERTS = ("certificate required", "bad certificate", "unknown ca", "certificate unknown")
_NOT_TLS = ("wrong version number", "record layer failure", "packet length", "unexpected eof")


async def diagnose(settings: Settings, timeout_s: float = 10.0) -> str | None:
    """None when a client can connect, authenticate and read metadata; else the one line."""
    from aiokafka.conn import collect_hosts, create_conn
    from aiokafka.protocol.metadata import MetadataRequest

    try:
        kwargs = client_kwargs(settings)
        hosts = collect_hosts(settings.kafka_bootstrap, randomize=False)
    except ConfigError as exc:
        return f"kafka: {exc}"
    except Exception as exc:  # a malformed bootstrap list
        return f"kafka: {env('kafka_bootstrap')}={settings.kafka_bootstrap!r}: {exc}"
    problems: list[str] = []
    for host, port, _ in hosts:
        conn = None
        try:
            conn = await asyncio.wait_for(
                create_conn(
                    host,
                    port,
                    client_id=f"{settings.kafka_client_id}-probe",
                    request_timeout_ms=int(timeout_s * 1000),
                    **kwargs,
                ),
                timeout_s,
            )
            await asyncio.wait_for(conn.send(MetadataRequest([])), timeout_s)
            return None
        except Exception as exc:
            problems.append(explain(exc, settings, f"{host}:{port}", timeout_s))
        finally:
            if conn is not None:
                conn.close()
    # an authentication or certificate problem says more than an unreachable second host
    problems.sort(key=lambda p: "unreachable" in p or "no answer" in p)
    return problems[0] if problems else f"kafka: {env('kafka_bootstrap')} is empty"


def explain(exc: BaseException, settings: Settings, where: str, timeout_s: float = 10.0) -> str:
    """The one line for a connection error: what failed and which variables to check."""
    from aiokafka import errors as kerr

    cause: BaseException | None = exc
    for _ in range(5):  # the TLS error is often the cause of a KafkaConnectionError
        if isinstance(cause, ssl.SSLError | kerr.SaslAuthenticationFailed):
            exc = cause
            break
        cause = cause.__cause__ if cause is not None else None
    names = " / ".join
    if isinstance(exc, kerr.SaslAuthenticationFailed):
        return (
            f"kafka: SASL authentication failed for user {settings.kafka_sasl_username!r} at "
            f"{where} (check {names([env('kafka_sasl_username'), env('kafka_sasl_password')])}"
            f", and {env('kafka_sasl_mechanism')}={settings.kafka_sasl_mechanism})"
        )
    if isinstance(exc, kerr.UnsupportedSaslMechanismError):
        return (
            f"kafka: the broker at {where} does not offer SASL {settings.kafka_sasl_mechanism}"
            f" (check {env('kafka_sasl_mechanism')})"
        )
    if isinstance(exc, ssl.SSLCertVerificationError):
        why = exc.verify_message or str(exc)
        if "mismatch" in why.lower():
            return (
                f"kafka: the broker certificate at {where} does not name that host ({why}) "
                f"(check {names([env('kafka_bootstrap'), env('kafka_ssl_check_hostname')])})"
            )
        return (
            f"kafka: the broker certificate at {where} is not trusted ({why}) "
            f"(check {env('kafka_ssl_cafile')})"
        )
    if isinstance(exc, ssl.SSLError):
        text = f"{exc.reason or exc}".lower().replace("_", " ")
        if any(a in text for a in _CERT_ALERTS):
            return (
                f"kafka: the broker at {where} refused the client certificate ({exc.reason}) "
                f"(check {names([env('kafka_ssl_certfile'), env('kafka_ssl_keyfile')])})"
            )
        if any(a in text for a in _NOT_TLS):
            return (
                f"kafka: TLS handshake with {where} failed ({exc.reason}); is that a TLS "
                f"listener? (check {names([env('kafka_security_protocol'), env('kafka_bootstrap')])})"
            )
        return f"kafka: TLS with {where} failed ({exc.reason or exc}) (check the RLSTREAM_KAFKA_SSL_* files)"
    if isinstance(exc, TimeoutError | asyncio.TimeoutError):
        return (
            f"kafka: no answer from {where} within {timeout_s:.0f}s "
            f"(check {names([env('kafka_bootstrap'), env('kafka_security_protocol')])})"
        )
    if isinstance(exc, kerr.KafkaConnectionError | ConnectionResetError | EOFError):
        hint = (
            f"{env('kafka_security_protocol')}={protocol(settings)} against what the listener "
            f"at {env('kafka_bootstrap')} speaks"
        )
        if uses_tls(settings) and settings.kafka_ssl_certfile is None:
            hint = (
                f"the listener may require a client certificate: "
                f"{names([env('kafka_ssl_certfile'), env('kafka_ssl_keyfile')])}; or {hint}"
            )
        return f"kafka: {where} closed the connection during the handshake (check {hint})"
    if isinstance(exc, OSError):
        return (
            f"kafka: broker unreachable at {where}: {exc.strerror or exc} "
            f"(check {env('kafka_bootstrap')})"
        )
    return f"kafka: cannot connect to {where}: {exc!r}"[:400]


async def start_or_explain(client: Any, settings: Settings) -> None:
    """Start an aiokafka client, or raise a ConfigError carrying :func:`diagnose`'s one
    line (for one-shot commands, which should not retry). The diagnosis runs first: a
    client that fails to bootstrap logs its own error lines before giving up."""
    line = await diagnose(settings)
    if line is not None:
        with contextlib.suppress(Exception):
            await client.stop()  # never started; stopping marks it closed (no warning)
        raise ConfigError(line)
    try:
        await client.start()
    except Exception as exc:
        with contextlib.suppress(Exception):
            await client.stop()
        line = await diagnose(settings) or f"kafka: cannot connect ({type(exc).__name__}: {exc})"
        raise ConfigError(line) from exc


class OneLine:
    """Logs a problem line when it changes, else at most once per ``every_s`` (why: a loop
    retrying every few seconds must not bury the log)."""

    def __init__(self, logger: logging.Logger = log, every_s: float = 60.0) -> None:
        self.logger, self.every_s = logger, every_s
        self._last: str | None = None
        self._at = 0.0

    def report(self, line: str) -> bool:
        now = time.monotonic()
        if line == self._last and now - self._at < self.every_s:
            return False
        self._last, self._at = line, now
        self.logger.error(line)
        return True

    def clear(self) -> None:
        if self._last is not None:
            self.logger.info("kafka: connected", extra={"after": self._last})
        self._last = None


async def wait_for_kafka(
    settings: Settings,
    on_problem: Callable[[str | None], None] = lambda _line: None,
    *,
    first_backoff_s: float = 1.0,
    max_backoff_s: float = 30.0,
    reporter: OneLine | None = None,
) -> None:
    """Return once :func:`diagnose` passes; until then report the line (rate-limited), hand
    it to ``on_problem`` (the readiness reason) and back off exponentially."""
    reporter = reporter or OneLine()
    delay = first_backoff_s
    while True:
        line = await diagnose(settings)
        on_problem(line)
        if line is None:
            reporter.clear()
            return
        reporter.report(line)
        await asyncio.sleep(delay)
        delay = min(max_backoff_s, delay * 2)


__all__ = ["OneLine", "diagnose", "explain", "start_or_explain", "wait_for_kafka"]
