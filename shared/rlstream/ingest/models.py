"""Options, rejects and the run summary of an ingest."""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict, Field, field_validator

from rlstream import limits
from rlstream.formats import format_names
from rlstream.formats.mapping import FieldMapping
from rlstream.ingest.subjects import DEFAULT_SUBJECT_FIELDS
from rlstream.transcript.model import SourceRef


class IngestOptions(BaseModel):
    """How records become transcripts; shared by the CLI and the streaming ingest service."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    format: str = "auto"
    mapping: FieldMapping | None = None
    redact: bool = True
    near_dup_merge: bool = False
    near_dup_threshold: float = Field(default=0.7, gt=0.0, le=1.0)
    max_rejects: int | None = Field(default=None, ge=0)
    task_key_field: str | None = None
    #: drop a conversation id seen before in the same run (first one wins)
    dedupe: bool = True
    #: records (lines / array items) above this size are rejected as message_too_large
    max_record_bytes: int | None = Field(default=limits.MAX_BYTES, gt=0)
    #: records nested deeper than this are rejected as nesting_too_deep
    max_depth: int = Field(default=limits.MAX_DEPTH, ge=1, le=limits.MAX_DEPTH_CEILING)
    #: metadata fields naming the data subject, stored as their keyed stand-in when
    #: redacting (rlstream.ingest.subjects; what ``rlstream erase --user-key`` matches)
    subject_fields: tuple[str, ...] = DEFAULT_SUBJECT_FIELDS

    @field_validator("format")
    @classmethod
    def _known_format(cls, v: str) -> str:
        if v != "auto" and v not in format_names():
            names = ", ".join(format_names())
            raise ValueError(f"unknown format {v!r}; expected auto or one of {names}")
        return v


class Reject(BaseModel):
    """A record that could not be ingested; the run goes on without it."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    source: SourceRef
    error_code: str
    reason: str
    raw_excerpt: str = ""


class IngestSummary(BaseModel):
    """Counts for one ingest run (filled in while the run is iterated)."""

    model_config = ConfigDict(extra="forbid")

    files: int = 0
    read: int = 0
    ok: int = 0
    rejected: int = 0
    duplicates: int = 0
    bytes_read: int = 0
    bytes_total: int = 0
    by_format: dict[str, int] = Field(default_factory=dict)
    rejects_by_code: dict[str, int] = Field(default_factory=dict)
    #: transcripts per task-key rule (explicit / opener / merged)
    task_key_rules: dict[str, int] = Field(default_factory=dict)
    #: distinct task-key groups per rule that created them
    task_key_groups: dict[str, int] = Field(default_factory=dict)
    #: PII replacements per type
    pii_found: dict[str, int] = Field(default_factory=dict)
