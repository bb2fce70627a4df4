"""The Backend interface and the registry that resolves a backend by name, lazily.

Backends import heavy libraries (torch, TRL) only when they train, so ``rlstream train
--help`` and ``--dry-run`` work without the ``train`` extra.
"""

from __future__ import annotations

import importlib
from pathlib import Path
from typing import Protocol, runtime_checkable

from rlstream.errors import ConfigError
from rlstream.training.config import Progress, RunResult, TrainConfig, TrainPlan

#: name -> "module:Class"; resolved on first use
BACKENDS: dict[str, str] = {
    "builtin": "rlstream.training.builtin:BuiltinBackend",
    "openrlhf": "rlstream.training.openrlhf:OpenRLHFBackend",
    "verl": "rlstream.training.verl:VerlBackend",
    # plans only: writes a NeMo RL config + adapter, refuses to train (no NeMo RL here)
    "nemo-rl": "rlstream.training.nemo_rl:NemoRLBackend",
}


@runtime_checkable
class Backend(Protocol):
    """A training backend.

    ``train`` writes ``adapter/`` (peft safetensors) and ``metrics.json`` into
    ``output_dir`` and returns a RunResult (status "failed" with a reason rather than
    raising for failures inside training); :func:`rlstream.training.train` adds
    ``run.json`` (lineage). ``config.method`` is already resolved (never "auto").
    """

    name: str

    def version(self) -> str: ...

    def plan(
        self, dataset_dir: Path, base_model: str | Path, config: TrainConfig, output_dir: Path
    ) -> TrainPlan: ...

    def train(
        self,
        dataset_dir: Path,
        base_model: str | Path,
        config: TrainConfig,
        output_dir: Path,
        progress: Progress | None = None,
    ) -> RunResult: ...


def get_backend(name: str) -> Backend:
    """The backend registered under ``name`` ("builtin" | "openrlhf" | "nemo-rl" | ...)."""
    target = BACKENDS.get(name)
    if target is None:
        raise ConfigError(f"unknown training backend {name!r}; choose one of {sorted(BACKENDS)}")
    module_name, _, cls_name = target.partition(":")
    try:
        module = importlib.import_module(module_name)
    except ModuleNotFoundError as exc:
        if exc.name is not None and module_name.startswith(exc.name):
            raise ConfigError(
                f"training backend {name!r} is not available in this build ({module_name} "
                "is missing)"
            ) from exc
        raise ConfigError(
            f"training backend {name!r} needs {exc.name!r}: pip install 'rlstream[train]'"
        ) from exc
    backend: Backend = getattr(module, cls_name)()
    return backend
