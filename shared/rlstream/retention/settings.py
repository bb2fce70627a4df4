"""Retention settings (env ``RLSTREAM_RETENTION_*``), read by the curator and the CLI.

Periods are seconds; 0 keeps that kind for ever. ``dataset_dir`` lives here (the curator's
settings inherit it) because retention must know where releases may be pruned: a release
recorded anywhere else (``rlstream improve run --output``) is never touched.
"""

from __future__ import annotations

from datetime import timedelta
from pathlib import Path

from pydantic import Field

from rlstream.retention.policy import DAY, RetentionPolicy
from rlstream.settings import Settings


def _period(seconds: float) -> timedelta | None:
    return timedelta(seconds=seconds) if seconds > 0 else None


class RetentionSettings(Settings):
    """The retention policy, and the curator's release folder it prunes in."""

    dataset_dir: Path | None = Field(default=None, description="default: <data_dir>/datasets")
    retention_interval_s: float = Field(
        default=3600.0, gt=0, description="how often the curator applies the retention policy"
    )
    retention_turn_buffers_s: float = Field(
        default=7 * DAY.total_seconds(),
        ge=0,
        description="closed turn buffers are deleted this long after closing (keep it >= "
        "RLSTREAM_ASSEMBLY_CLOSED_RETENTION_S: ingest needs them to spot late turns); 0 = for ever",
    )
    retention_pending_rollouts_s: float = Field(
        default=30 * DAY.total_seconds(),
        ge=0,
        description="rollouts no release took are deleted this long after they were stored; "
        "0 = for ever",
    )
    retention_datasets_keep: int = Field(
        default=10, ge=0, description="newest releases per agent never pruned; 0 = all of them"
    )
    retention_datasets_s: float = Field(
        default=30 * DAY.total_seconds(),
        ge=0,
        description="older releases (beyond the newest, in no kept model's lineage) lose their "
        "training files; 0 = for ever",
    )
    retention_run_artifacts_s: float = Field(
        default=14 * DAY.total_seconds(),
        ge=0,
        description="folders of runs that failed or that the gate rejected are deleted this "
        "long after the run's last change; 0 = for ever",
    )

    def datasets_path(self) -> Path:
        return self.dataset_dir or (self.data_dir / "datasets")

    def retention_policy(self) -> RetentionPolicy:
        return RetentionPolicy(
            turn_buffers=_period(self.retention_turn_buffers_s),
            pending_rollouts=_period(self.retention_pending_rollouts_s),
            datasets_keep=self.retention_datasets_keep or None,
            datasets=_period(self.retention_datasets_s),
            run_artifacts=_period(self.retention_run_artifacts_s),
        )
