"""The hand-off from a released dataset to training.

The curator calls a :class:`Launcher` after a dataset is sealed and published. Launchers
must be idempotent on ``dataset_id`` (a curator restarted mid-release calls again): the
Kubernetes launcher names its Job from the dataset hash, the local one checks a marker.
"""

from __future__ import annotations

from typing import Protocol, runtime_checkable

from pydantic import BaseModel, ConfigDict, Field

from rlstream.events.models import DatasetReleased


class LaunchRequest(BaseModel):
    """What training needs to start: the dataset and how it was chosen."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    dataset_id: str
    agent: str
    reward_spec: str
    path: str
    sha256: str
    method: str | None = Field(default=None, description="recommended method (sft/dpo/grpo)")

    @classmethod
    def from_release(cls, ev: DatasetReleased) -> LaunchRequest:
        return cls(
            dataset_id=ev.dataset_id,
            agent=ev.agent,
            reward_spec=ev.reward_spec,
            path=ev.path,
            sha256=ev.sha256,
            method=ev.profile.method,
        )


class LaunchResult(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")

    run_id: str
    created: bool = Field(description="False when this dataset was already launched")


@runtime_checkable
class Launcher(Protocol):
    async def launch(self, request: LaunchRequest) -> LaunchResult: ...


class RecordingLauncher:
    """Records requests instead of starting anything (tests, dry runs, ``launch=none``)."""

    def __init__(self) -> None:
        self.requests: list[LaunchRequest] = []

    async def launch(self, request: LaunchRequest) -> LaunchResult:
        created = all(r.dataset_id != request.dataset_id for r in self.requests)
        if created:
            self.requests.append(request)
        return LaunchResult(run_id=f"run-{request.dataset_id[:16]}", created=created)
