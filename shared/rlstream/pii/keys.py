"""Keyed pseudonyms: the stand-in for an identifier that holds PII (see docs/pii.md).

An unkeyed hash of an e-mail address is no pseudonym: whoever holds a list of addresses
recomputes every stand-in and reads the ids back. With a secret key (``RLSTREAM_PII_KEY``)
the stand-in is ``pii-<key id>-<HMAC-SHA256(key, value), 96 bits>``: stable for one key,
so joins, dedupe and grouping still work, and not computable without it. The key id is
derived from the key (a rotated key cannot keep the old id by mistake), so stand-ins made
under different keys are told apart.

Without a key (the CLI, the batch pipeline, a one-pod demo) the stand-in stays
``pii-<blake2b-96>`` of the value, as before: existing datasets and golden files remain
valid, and it is reversible by a dictionary attack, so it is for local use only. Services
outside the demo refuse to start without a key (:func:`configure_from_settings`).

Why a process-wide pseudonymiser instead of an argument: stand-ins are made deep inside
redaction, task-key resolution and dead-lettering, reached from many call sites; the key is
one per process, set once at start (``Runtime.start``, the CLI's entry) and never changed
while records flow. Tests reset it with :func:`configure` (``None``).
"""

from __future__ import annotations

import hashlib
import hmac
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

from rlstream.errors import ConfigError

if TYPE_CHECKING:  # redaction imports this module; settings are only read at start
    from rlstream.settings import Settings

#: the shortest key accepted, in bytes of its UTF-8 text (``openssl rand -hex 32`` gives 64)
KEY_MIN_BYTES = 32
#: hex digits of the key id (derived from the key)
KEY_ID_HEX = 8
_DIGEST_HEX = 24  # 96 bits, as the unkeyed form
_KEY_ID_MESSAGE = b"rlstream pii key id"


@dataclass(frozen=True, slots=True)
class Pseudonymiser:
    """Makes keyed stand-ins with one key; ``key_id`` names the key inside each of them."""

    key: bytes = field(repr=False)
    key_id: str = field(init=False)

    def __post_init__(self) -> None:
        if len(self.key) < KEY_MIN_BYTES:
            raise ConfigError(f"the PII key has {len(self.key)} bytes; at least {KEY_MIN_BYTES}")
        digest = hmac.digest(self.key, _KEY_ID_MESSAGE, "sha256").hex()
        object.__setattr__(self, "key_id", digest[:KEY_ID_HEX])

    def stand_in(self, value: str) -> str:
        digest = hmac.digest(self.key, value.encode(), "sha256").hex()
        return f"pii-{self.key_id}-{digest[:_DIGEST_HEX]}"


_current: Pseudonymiser | None = None


def configure(pseudonymiser: Pseudonymiser | None) -> None:
    """Set (or with ``None`` clear) the process's pseudonymiser."""
    global _current
    _current = pseudonymiser


def current() -> Pseudonymiser | None:
    return _current


def unkeyed_stand_in(value: str) -> str:
    """The keyless form: reversible by anyone with a list of candidate values."""
    return "pii-" + hashlib.blake2b(value.encode(), digest_size=12).hexdigest()


def stand_in(value: str) -> str:
    """A stable stand-in for an identifier that contains PII: keyed when a key is set."""
    p = _current
    return unkeyed_stand_in(value) if p is None else p.stand_in(value)


def _read_key_file(path: Path) -> str:
    try:
        return path.read_text().rstrip("\r\n")
    except OSError as exc:
        raise ConfigError(
            f"RLSTREAM_PII_KEY_FILE: cannot read {path}: {exc.strerror or exc}"
        ) from exc


def from_settings(settings: Settings) -> Pseudonymiser | None:
    """The pseudonymiser ``RLSTREAM_PII_KEY`` (or ``_FILE``) asks for; ``None`` if neither."""
    secret, path = settings.pii_key, settings.pii_key_file
    if secret is not None and path is not None:
        raise ConfigError("RLSTREAM_PII_KEY and RLSTREAM_PII_KEY_FILE are both set: set one")
    if secret is not None:
        text, name = secret.get_secret_value(), "RLSTREAM_PII_KEY"
    elif path is not None:
        text, name = _read_key_file(path), "RLSTREAM_PII_KEY_FILE"
    else:
        return None
    key = text.encode()
    if len(key) < KEY_MIN_BYTES:
        raise ConfigError(
            f"{name}: the key has {len(key)} bytes, at least {KEY_MIN_BYTES} are needed "
            "(e.g. the output of `openssl rand -hex 32`)"
        )
    return Pseudonymiser(key)


def configure_from_settings(settings: Settings, *, service: bool = False) -> Pseudonymiser | None:
    """Configure the process from settings; a ``service`` (a streaming deployable) without a
    key is a ConfigError unless ``embedded_postgres`` asks for the one-pod demo: its stand-ins
    land in the shared database and topics, where an unkeyed one is still personal data."""
    p = from_settings(settings)
    if p is None and service and not settings.embedded_postgres:
        raise ConfigError(
            "RLSTREAM_PII_KEY is not set: a service keys the stand-ins of identifiers that "
            "hold PII with a secret (the chart's existingSecret, key RLSTREAM_PII_KEY; "
            "docs/pii.md); RLSTREAM_EMBEDDED_POSTGRES=true (a one-pod demo) runs unkeyed"
        )
    configure(p)
    return p
