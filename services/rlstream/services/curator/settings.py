"""Curator settings (env ``RLSTREAM_*``): the release policy thresholds live here."""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict, Field

from rlstream.delivery.runtime import ServiceSettings
from rlstream.launch.settings import LaunchSettings
from rlstream.retention.settings import RetentionSettings


class Thresholds(BaseModel):
    """One agent's release policy (any field left out falls back to the global one)."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    min_rollouts: int | None = None
    min_groups: int | None = None
    min_gradient_support: float | None = Field(default=None, ge=0.0, le=1.0)


class CuratorSettings(ServiceSettings, LaunchSettings, RetentionSettings):
    """Release policy + the launcher (``RLSTREAM_LAUNCHER``, ``RLSTREAM_K8S_*``, budgets) +
    retention (``RLSTREAM_RETENTION_*``, and ``dataset_dir``, where releases are written)."""

    release_min_rollouts: int = Field(default=200, description="pending rollouts needed")
    release_min_groups: int = Field(default=20, description="pending groups with n >= 2")
    release_min_gradient_support: float = Field(default=0.3, ge=0.0, le=1.0)
    release_check_interval_s: float = Field(default=2.0, description="per agent and spec")
    release_lock_ttl_ms: int = Field(default=15_000, description="extended while held")
    release_max_rollouts: int = Field(
        default=20_000,
        ge=1,
        description="pending rollouts read per release (whole groups, round robin): "
        "bounds the curator's memory however many rollouts curation leaves pending",
    )
    launch_retry_interval_s: float = Field(
        default=10.0, description="how often releases without a run are launched again"
    )
    release_overrides: dict[str, Thresholds] = Field(
        default_factory=dict,
        description='per agent, JSON: {"refunds-bot": {"min_rollouts": 1000}}',
    )

    def thresholds_for(self, agent: str) -> tuple[int, int, float]:
        o = self.release_overrides.get(agent, Thresholds())
        return (
            self.release_min_rollouts if o.min_rollouts is None else o.min_rollouts,
            self.release_min_groups if o.min_groups is None else o.min_groups,
            self.release_min_gradient_support
            if o.min_gradient_support is None
            else o.min_gradient_support,
        )
