"""Who to erase: a conversation, a user (a subject field's value, or a raw personal value),
or an agent; and the forms those values take once stored.

Nothing rlstream stores holds a raw identifier that carries PII: ingest replaces it with a
stand-in (``pii-<key id>-<HMAC>``, :mod:`rlstream.pii.keys`), and the values of the subject
fields (``RLSTREAM_SUBJECT_FIELDS``, e.g. ``customer_id``) always become their keyed
stand-in (:mod:`rlstream.ingest.subjects`). So a selector is matched through every form
ingest could have written: the value as given, its keyed stand-in (with this process's
key), the unkeyed local form (the CLI and the demo without a key), and, for ids, the
bounded digest of an over-long one. Free text is no help: an e-mail address in a message
became a placeholder (``<EMAIL_1>``) that every conversation shares, so it is never a
match. The value itself is never stored, logged or printed: :meth:`Selector.describe`
names the kind and field only.
"""

from __future__ import annotations

import re
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator

from rlstream.errors import ConfigError
from rlstream.limits import bounded_id
from rlstream.pii import keys
from rlstream.pii.fields import safe_id
from rlstream.pii.redact import redact_text

SelectorKind = Literal["conversation", "user_key", "user_value", "agent"]

_PLACEHOLDERS = re.compile(r"^(?:\s*<[A-Z_]+_\d+>\s*)+$")


class Selector(BaseModel):
    """One erasure request. ``field`` narrows a user key to one subject field."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    kind: SelectorKind
    value: str = Field(min_length=1, repr=False)
    field: str | None = None

    @field_validator("value")
    @classmethod
    def _not_blank(cls, v: str) -> str:
        if not v.strip():
            raise ValueError("an erasure selector cannot be blank")
        return v

    def describe(self) -> str:
        """What was asked, without the value (for the record, logs and output)."""
        where = f" in {self.field}" if self.field else ""
        return {
            "conversation": "one conversation",
            "user_key": f"a user key{where}",
            "user_value": "a raw personal value",
            "agent": "every conversation of an agent",
        }[self.kind]

    def forms(self) -> tuple[str, ...]:
        """Every stored form of the value, sorted (duplicates once)."""
        v = self.value
        out = {v, keys.unkeyed_stand_in(v)}
        current = keys.current()
        if current is not None:
            out.add(current.stand_in(v))
        if self.kind in ("conversation", "agent", "user_value"):
            safe = safe_id(v) or v
            out |= {safe, bounded_id(safe)}
        if self.kind == "user_value":
            red = redact_text(v)
            if red != v and not _PLACEHOLDERS.match(red):
                out.add(red)  # something identifying survived redaction: it is stored so
        return tuple(sorted(out))


def match_fields(subject_fields: tuple[str, ...], selector: Selector) -> tuple[str, ...]:
    """The metadata fields a user selector is matched in: its ``field`` (any metadata
    field: one ingest did not pseudonymise matches the value as sent), else every subject
    field."""
    if selector.field is not None:
        return (selector.field,)
    if not subject_fields:
        raise ConfigError(
            "no subject field to match a user in: set RLSTREAM_SUBJECT_FIELDS or pass --field"
        )
    return subject_fields
