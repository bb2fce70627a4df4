"""Subject fields: the metadata fields that name the person a conversation is about.

A customer id is personal data even when no detector sees PII in it (``C-20931``), and an
e-mail address in metadata would otherwise become a placeholder (``<EMAIL_1>``) that every
conversation shares. Either way erasure could not find that person's conversations again.
So ingest stores each subject field's value as its keyed stand-in (``pii-<key id>-<HMAC>``,
:mod:`rlstream.pii.keys`): no raw value is stored, equal values still match, and
``rlstream erase --user-key C-20931`` (or ``--user-value jane@example.com``) finds them by
computing the same stand-in with the same key. Fields: ``RLSTREAM_SUBJECT_FIELDS``.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from pydantic import JsonValue

from rlstream.fastmodel import replaced
from rlstream.pii.keys import stand_in
from rlstream.transcript.model import Transcript

#: the metadata fields pseudonymised when none are configured
DEFAULT_SUBJECT_FIELDS: tuple[str, ...] = ("customer_id", "user_id", "account_id", "email")


def subject_values(metadata: Mapping[str, Any], fields: Sequence[str]) -> dict[str, str]:
    """The subject fields present with a scalar value, as text (read before redaction)."""
    out: dict[str, str] = {}
    for name in fields:
        v = metadata.get(name)
        if isinstance(v, bool) or v is None:
            continue
        if isinstance(v, str | int | float) and str(v):
            out[name] = str(v)
    return out


def pseudonymise_subjects(t: Transcript, values: Mapping[str, str]) -> Transcript:
    """``t`` with each subject field's value replaced by its stand-in."""
    if not values:
        return t
    metadata: dict[str, JsonValue] = dict(t.metadata)
    for name, v in values.items():
        metadata[name] = stand_in(v)
    return replaced(t, {"metadata": metadata})
