"""Replays: dead letters and topic ranges back onto a topic, tagged so that a service's
seen keys do not swallow them and its store keeps them idempotent.

A replayed record carries two headers:

* ``x-rlstream-replay: <replay id>``, the *marker*. A service that finds an input marked
  seen in Redis would drop it (the 7-day seen keys); for a marked input it asks the store
  instead, and only what is both seen and stored is dropped. Something seen but not
  stored (a database restored from a backup, rows removed by hand) goes through once; a
  replay of what was fully processed stays a no-op, however often it is run
  (:func:`rlstream.delivery.publish.publish_once`). Services forward the marker on what
  they publish for a marked input, so the next stage judges it the same way.
* ``x-rlstream-replayed-from: <topic>/<partition>/<offset>``, where it was read from (the
  dead letter, or the record of the re-read range), for an operator reading the topic.

A dead letter keeps the original value and headers byte for byte unless it had to redact
or truncate them. A redacted letter replays as it was stored, redacted: the original is
gone by design and is never needed. A truncated or ``unprocessable`` letter cannot be
replayed from itself, only from the source topic (``rlstream replay``), and says so.
"""

from __future__ import annotations

import base64
import secrets
from collections.abc import Sequence
from datetime import UTC, datetime

from rlstream.delivery.dlq import UNPROCESSABLE, RecordLike
from rlstream.events.models import DLQRecord

#: the marker header; its value is the replay id
REPLAY = "x-rlstream-replay"
REPLAYED_FROM = "x-rlstream-replayed-from"
_OURS = frozenset({REPLAY, REPLAYED_FROM})

Header = tuple[str, bytes]
#: (topic, key, value, headers) to publish
Message = tuple[str, bytes | None, bytes, list[Header]]


def new_replay_id(now: datetime | None = None) -> str:
    """``replay-<UTC time>-<6 hex>``: sortable, and distinct for two runs in one second."""
    stamp = (now or datetime.now(UTC)).astimezone(UTC).strftime("%Y%m%dT%H%M%SZ")
    return f"replay-{stamp}-{secrets.token_hex(3)}"


def replay_id(record: RecordLike) -> str | None:
    """The replay id a record is marked with, or None for an ordinary record."""
    for name, value in record.headers or ():
        if name == REPLAY:
            return (value or b"").decode("utf-8", "replace")
    return None


def is_replay(record: RecordLike) -> bool:
    return replay_id(record) is not None


def carried(record: RecordLike) -> list[Header]:
    """The headers an output of ``record`` carries on: the marker of a replayed input."""
    rid = replay_id(record)
    return [] if rid is None else [(REPLAY, rid.encode())]


def tagged(headers: Sequence[Header], rid: str, where: str) -> list[Header]:
    """``headers`` without any earlier replay tags, plus this replay's two."""
    kept = [(k, v) for k, v in headers if k not in _OURS]
    return [*kept, (REPLAY, rid.encode()), (REPLAYED_FROM, where.encode())]


def not_replayable(entry: DLQRecord) -> str | None:
    """Why this letter cannot be replayed from itself, or None."""
    if entry.error_code == UNPROCESSABLE:
        return "unprocessable: the letter keeps only the record's coordinates"
    if entry.value_truncated:
        return "its value was cut to fit the DLQ topic"
    return None


def replay_message(entry: DLQRecord, where: str, rid: str) -> Message:
    """The letter back onto its source topic; ``where`` = its ``topic/partition/offset``
    on the DLQ topic. A redacted letter goes as stored (redacted)."""
    headers = [(name, base64.b64decode(value)) for name, value in entry.headers]
    return entry.topic, entry.original_key(), entry.original_value(), tagged(headers, rid, where)


def record_message(record: RecordLike, rid: str, to_topic: str | None = None) -> Message:
    """A record of a re-read range onto ``to_topic`` (default: its own topic)."""
    where = f"{record.topic}/{record.partition}/{record.offset}"
    headers = [(str(k), v or b"") for k, v in record.headers or ()]
    return to_topic or record.topic, record.key, record.value or b"", tagged(headers, rid, where)
