"""Ingest settings (env ``RLSTREAM_*``), frozen after startup."""

from __future__ import annotations

from typing import Literal

from rlstream.delivery.runtime import ServiceSettings


class IngestSettings(ServiceSettings):
    assembly_idle_timeout_s: float = 300.0
    assembly_late_policy: Literal["dlq", "reopen"] = "dlq"
    assembly_sweep_interval_s: float = 5.0
