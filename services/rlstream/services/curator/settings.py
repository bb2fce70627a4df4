"""Curator settings (env ``RLSTREAM_*``): the release policy thresholds live here."""

from __future__ import annotations

from pathlib import Path
from typing import Literal

from pydantic import Field

from rlstream.delivery.runtime import ServiceSettings


class CuratorSettings(ServiceSettings):
    release_min_rollouts: int = Field(default=200, description="pending rollouts needed")
    release_min_groups: int = Field(default=20, description="pending groups with n >= 2")
    release_min_gradient_support: float = Field(default=0.3, ge=0.0, le=1.0)
    release_check_interval_s: float = Field(default=2.0, description="per agent and spec")
    release_lock_ttl_ms: int = Field(default=15_000, description="extended while held")
    dataset_dir: Path | None = Field(default=None, description="default: <data_dir>/datasets")
    launcher: Literal["record", "none"] = "record"

    def datasets_path(self) -> Path:
        return self.dataset_dir or (self.data_dir / "datasets")
