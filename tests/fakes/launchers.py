"""RecordingLauncher: records run specs instead of starting anything (unit tests only)."""

from __future__ import annotations

from rlstream.launch import LaunchResult, RunSpec


class RecordingLauncher:
    name = "recording"

    def __init__(self, settings: object = None) -> None:
        self.specs: list[RunSpec] = []

    async def launch(self, spec: RunSpec) -> LaunchResult:
        created = all(s.run_id != spec.run_id for s in self.specs)
        if created:
            self.specs.append(spec)
        return LaunchResult(run_id=spec.run_id, created=created, launcher=self.name)

    async def close(self) -> None:
        return None
