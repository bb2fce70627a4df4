"""Ingest settings (env ``RLSTREAM_*``), frozen after startup."""

from __future__ import annotations

from typing import Literal

from pydantic import Field

from rlstream.delivery.runtime import ServiceSettings
from rlstream.ingest.subjects import DEFAULT_SUBJECT_FIELDS


class IngestSettings(ServiceSettings):
    subject_fields: tuple[str, ...] = Field(
        default=DEFAULT_SUBJECT_FIELDS,
        description="metadata fields naming the data subject (JSON list): stored as their "
        "keyed stand-in, what `rlstream erase --user-key` finds (docs/erasure.md)",
    )
    assembly_idle_timeout_s: float = 300.0
    assembly_late_policy: Literal["dlq", "reopen"] = "dlq"
    assembly_sweep_interval_s: float = 5.0
    assembly_closed_retention_s: float = Field(
        default=7 * 86400,
        ge=0,
        description="closed turn buffers (kept to recognise late turns of a finished "
        "conversation) are deleted this long after closing; 0 keeps them for ever",
    )
    assembly_purge_interval_s: float = Field(
        default=3600.0, gt=0, description="how often closed turn buffers are purged"
    )
