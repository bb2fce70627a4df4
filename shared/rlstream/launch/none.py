"""``launcher=none``: releases are announced but nothing is trained (the default with a
real Postgres and no launcher configured)."""

from __future__ import annotations

from rlstream.launch.base import LaunchResult, RunSpec
from rlstream.launch.settings import LaunchSettings


class NoneLauncher:
    name = "none"

    def __init__(self, settings: LaunchSettings | None = None) -> None:
        self.settings = settings

    async def launch(self, spec: RunSpec) -> LaunchResult:
        return LaunchResult(run_id=spec.run_id, created=False, launcher=self.name)

    async def close(self) -> None:
        return None
