"""Grader settings (env ``RLSTREAM_*``), frozen after startup."""

from __future__ import annotations

from pathlib import Path

from pydantic import Field

from rlstream.delivery.runtime import ServiceSettings


class GraderSettings(ServiceSettings):
    reward_config: Path | None = Field(
        default=None, description="per-agent reward YAML; None: reward_spec for every agent"
    )
    reward_spec: str = Field(default="outcome", description="CLI form, e.g. 'outcome,gsm8k:2'")
