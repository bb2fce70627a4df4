"""The hand-off from a released dataset to training.

The curator plans a :class:`RunSpec` for each release and hands it to a :class:`Launcher`.
Launchers must be idempotent on the run id, which derives from the dataset's sha256 (a
curator restarted mid-release, or a redelivered release, calls again): the Kubernetes
launcher names its Job from it and adopts the Job on 409, the local one claims a marker
file. Launchers that can see a run finish (a Job's conditions, a child's exit code) also
implement :class:`RunFollower`.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Literal, Protocol, runtime_checkable

from pydantic import BaseModel, ConfigDict, Field, JsonValue

from rlstream.errors import ConfigError
from rlstream.events.models import DatasetReleased

TRAINER_MODULE = "rlstream.services.trainer"
#: trainer exit code for a bad configuration: never worth a retry (podFailurePolicy FailJob)
EXIT_BAD_CONFIG = 2


class LaunchError(ConfigError):
    """A launcher is unknown or misconfigured."""

    code = "launch_error"


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

    @classmethod
    def from_dataset(
        cls,
        dataset_dir: Path,
        *,
        agent: str | None = None,
        reward_spec: str | None = None,
        method: str | None = None,
    ) -> LaunchRequest:
        """A request for a dataset folder (``rlstream train --launcher ...``)."""
        try:
            manifest = json.loads((Path(dataset_dir) / "manifest.json").read_text())
        except (OSError, ValueError) as e:
            raise LaunchError(f"{dataset_dir} is not a curated dataset: {e}") from e
        specs = manifest.get("reward_specs") or ["unknown"]
        return cls(
            dataset_id=str(manifest["dataset_id"]),
            agent=agent or "default",
            reward_spec=reward_spec or str(specs[0]),
            path=str(Path(dataset_dir).resolve()),
            sha256=str(manifest["dataset_id"]),  # the id is the sha256 over the files' sha256s
            method=method if method and method != "auto" else manifest.get("method"),
        )


def run_id_for(sha256: str) -> str:
    """One dataset, one run: the id every launcher and the runs table use."""
    return f"run-{sha256[:24]}"


class RunSpec(BaseModel):
    """A planned run: what the trainer service is started with."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    run_id: str
    request: LaunchRequest
    backend: str = "builtin"
    method: str = "auto"
    base_model: str | None = None
    output_dir: str
    max_steps: int | None = None
    config: dict[str, JsonValue] = Field(
        default_factory=dict, description="TrainConfig overrides (JSON)"
    )

    def trainer_args(self) -> list[str]:
        """``python -m rlstream.services.trainer`` arguments (the Job's and the child's)."""
        r = self.request
        args = [
            "--run-id", self.run_id, "--dataset", r.path, "--output", self.output_dir,
            "--method", self.method, "--backend", self.backend, "--agent", r.agent,
            "--reward-spec", r.reward_spec,
        ]  # fmt: skip
        if self.base_model:
            args += ["--model", self.base_model]
        if self.max_steps is not None:
            args += ["--max-steps", str(self.max_steps)]
        if self.config:
            args += ["--config", json.dumps(self.config, sort_keys=True)]
        return args

    def argv_hash(self) -> str:
        return hashlib.sha256("\x00".join(self.trainer_args()).encode()).hexdigest()


def plan_run(
    request: LaunchRequest,
    *,
    runs_dir: Path,
    backend: str = "builtin",
    base_model: str | None = None,
    max_steps: int | None = None,
    config: dict[str, JsonValue] | None = None,
) -> RunSpec:
    run_id = run_id_for(request.sha256)
    method = request.method if request.method in ("sft", "dpo", "grpo") else "auto"
    return RunSpec(
        run_id=run_id,
        request=request,
        backend=backend,
        method=method,
        base_model=base_model,
        output_dir=str(runs_dir / run_id),
        max_steps=max_steps,
        config=dict(config or {}),
    )


class LaunchResult(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")

    run_id: str
    created: bool = Field(description="False when this dataset was already launched")
    launcher: str
    handle: str | None = Field(default=None, description="Job name, pid ... for humans")


class RunUpdate(BaseModel):
    """A state a launcher observed for one of its runs (Job condition, exit code)."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    run_id: str
    state: Literal["started", "succeeded", "failed"]
    reason: str | None = None
    spec: RunSpec | None = Field(default=None, description="when the launcher can recover it")


OnUpdate = Callable[[RunUpdate], Awaitable[None]]


@runtime_checkable
class Launcher(Protocol):
    name: str

    async def launch(self, spec: RunSpec) -> LaunchResult: ...

    async def close(self) -> None: ...


@runtime_checkable
class RunFollower(Protocol):
    """A launcher that reports its runs' progress; ``follow`` runs until cancelled."""

    async def follow(self, on_update: OnUpdate) -> None: ...
