"""Dead letters back onto their source topic: which can be, and the message that replays one.

A dead letter keeps the original value and headers byte for byte unless it had to redact
or truncate them (``value_redacted`` / ``value_truncated``) or could keep nothing
(``unprocessable``): those cannot be replayed from the letter, only from the source, and
say so. A replayed record carries ``x-rlstream-replayed-from`` (the letter's own
coordinates), so a consumer, or an operator reading the topic, can tell it from the
original.
"""

from __future__ import annotations

import base64

from rlstream.events.models import DLQRecord

REPLAYED_FROM = "x-rlstream-replayed-from"

Message = tuple[str, bytes | None, bytes, list[tuple[str, bytes]]]


def not_replayable(entry: DLQRecord) -> str | None:
    """Why this letter cannot be replayed from itself, or None."""
    if entry.error_code == "unprocessable":
        return "unprocessable: the letter keeps only the record's coordinates"
    if entry.value_redacted:
        return "its value was redacted (PII) before it was stored"
    if entry.value_truncated:
        return "its value was cut to fit the DLQ topic"
    return None


def replay_message(entry: DLQRecord, where: str) -> Message:
    """(source topic, key, value, headers) to publish; ``where`` = the letter's
    ``topic/partition/offset`` on the DLQ topic."""
    headers = [(name, base64.b64decode(value)) for name, value in entry.headers]
    headers.append((REPLAYED_FROM, where.encode()))
    return entry.topic, entry.original_key(), entry.original_value(), headers
