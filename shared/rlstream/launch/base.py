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
from typing import Any, Literal, Protocol, runtime_checkable

from pydantic import BaseModel, ConfigDict, Field, model_validator

from rlstream.errors import ConfigError
from rlstream.events.models import DatasetReleased
from rlstream.training.config import TrainConfig, run_id_for

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


class RunSpec(BaseModel):
    """A planned run: what the trainer service is started with. ``config`` is the whole
    :class:`TrainConfig` (every CLI flag, ``RLSTREAM_TRAIN_CONFIG``), passed to the trainer
    as ``--config`` and read back there as the same model."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    run_id: str
    request: LaunchRequest
    backend: str = "builtin"
    base_model: str | None = None
    output_dir: str
    config: TrainConfig = Field(default_factory=TrainConfig)

    @model_validator(mode="before")
    @classmethod
    def _legacy(cls, data: Any) -> Any:
        """A spec written by an earlier release (a Job annotation) kept ``method`` and
        ``max_steps`` beside a dict of overrides: fold them into the config."""
        if isinstance(data, dict) and ("method" in data or "max_steps" in data):
            data = dict(data)
            config = dict(data.get("config") or {})
            method, steps = data.pop("method", None), data.pop("max_steps", None)
            if method is not None:
                config.setdefault("method", method)
            if steps is not None:
                config.setdefault("max_steps", steps)
            data["config"] = config
        return data

    @property
    def method(self) -> str:
        """The run's method (``auto`` only for a spec planned without its dataset)."""
        return self.config.method

    def trainer_args(self) -> list[str]:
        """``python -m rlstream.services.trainer`` arguments (the Job's and the child's)."""
        r = self.request
        args = [
            "--run-id", self.run_id, "--dataset", r.path, "--output", self.output_dir,
            "--backend", self.backend, "--agent", r.agent, "--reward-spec", r.reward_spec,
        ]  # fmt: skip
        if self.base_model:
            args += ["--model", self.base_model]
        return [*args, "--config", self.config.model_dump_json()]

    def argv_hash(self) -> str:
        return hashlib.sha256("\x00".join(self.trainer_args()).encode()).hexdigest()


def plan_run(
    request: LaunchRequest,
    *,
    runs_dir: Path,
    config: TrainConfig | None = None,
    backend: str = "builtin",
    base_model: str | None = None,
) -> RunSpec:
    """The run of ``config`` on the request's dataset. The coordinator and the CLI pass a
    config whose method :func:`rlstream.training.data.resolve_config` resolved; with
    ``auto`` the request's recommended method is taken, else the trainer resolves it."""
    cfg = config or TrainConfig()
    if cfg.method == "auto" and request.method in ("sft", "dpo", "grpo"):
        cfg = cfg.model_copy(update={"method": request.method})
    run_id = run_id_for(request.sha256)
    return RunSpec(
        run_id=run_id,
        request=request,
        backend=backend,
        base_model=base_model,
        output_dir=str(runs_dir / run_id),
        config=cfg,
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
