"""train() and plan(): the one entry point the CLI and the trainer service call.

train() verifies the dataset, resolves the method and the base model, hands the run to the
backend and writes ``run.json`` (lineage) next to the backend's ``adapter/`` and
``metrics.json``, whether the run succeeded or failed.
"""

from __future__ import annotations

import hashlib
import importlib.metadata
import os
import time
from pathlib import Path
from typing import Any

import orjson

from rlstream.curation import Manifest
from rlstream.training.backend import get_backend
from rlstream.training.basemodel import (
    BASE_MODEL_ID,
    default_models_dir,
    model_identity,
    resolve_model,
)
from rlstream.training.config import Progress, RunResult, TrainConfig, TrainPlan, run_id_for
from rlstream.training.data import resolve_config

RUN_FILE = "run.json"
METRICS_FILE = "metrics.json"
ADAPTER_DIR = "adapter"


def _sha256_json(value: Any) -> str:
    return hashlib.sha256(orjson.dumps(value, option=orjson.OPT_SORT_KEYS)).hexdigest()


def plan(
    dataset_dir: Path,
    *,
    output_dir: Path,
    config: TrainConfig,
    backend: str = "builtin",
    base_model: str | Path | None = None,
) -> TrainPlan:
    """What :func:`train` would run. Never converts or downloads the base model."""
    _, cfg = resolve_config(dataset_dir, config)
    model: str | Path = (
        base_model if base_model is not None else default_models_dir() / BASE_MODEL_ID
    )
    return get_backend(backend).plan(dataset_dir, model, cfg, output_dir)


def train(
    dataset_dir: Path,
    *,
    output_dir: Path,
    config: TrainConfig,
    backend: str = "builtin",
    base_model: str | Path | None = None,
    run_id: str | None = None,
    progress: Progress | None = None,
) -> RunResult:
    """Train on a curated dataset folder; returns how the run ended.

    Configuration problems (not a dataset, no rows for the method, unknown backend, missing
    base model) raise ConfigError before anything runs.
    """
    manifest, cfg = resolve_config(dataset_dir, config)
    be = get_backend(backend)
    model = resolve_model(base_model)
    rid = run_id or run_id_for(manifest.dataset_id)
    output_dir.mkdir(parents=True, exist_ok=True)
    the_plan = be.plan(dataset_dir, model, cfg, output_dir)
    started = time.time()
    result = be.train(dataset_dir, model, cfg, output_dir, progress)
    result = result.model_copy(update={"run_id": rid})
    write_run_json(output_dir, result, manifest, the_plan, cfg, model, be.version(), started)
    return result


def write_run_json(
    output_dir: Path,
    result: RunResult,
    manifest: Manifest,
    the_plan: TrainPlan,
    config: TrainConfig,
    model: str | Path,
    backend_version: str,
    started: float,
) -> dict[str, Any]:
    """Lineage: dataset -> run (backend, config, argv) -> base model -> artifacts."""
    info: dict[str, Any] = {
        "schema_version": 1,
        "run_id": result.run_id,
        "status": result.status,
        "reason": result.reason,
        "method": result.method,
        "backend": {"name": result.backend, "version": backend_version},
        "dataset": {
            "id": manifest.dataset_id,
            # the dataset id is the sha256 over its files' sha256s (curation/writer.py)
            "sha256": manifest.dataset_id,
            "files": {k: v.sha256 for k, v in sorted(manifest.files.items())},
            "reward_specs": list(manifest.reward_specs),
            "policy_versions": list(manifest.policy_versions),
            "recommended_method": manifest.method,
        },
        "base_model": model_identity(model),
        "config": config.model_dump(mode="json"),
        "config_sha256": _sha256_json(config.model_dump(mode="json")),
        "argv": list(the_plan.argv),
        "argv_sha256": hashlib.sha256("\0".join(the_plan.argv).encode()).hexdigest(),
        "rlstream_version": _version("rlstream"),
        "image": os.environ.get("RLSTREAM_IMAGE"),
        "image_digest": os.environ.get("RLSTREAM_IMAGE_DIGEST"),
        "adapter_dir": ADAPTER_DIR if result.adapter_dir else None,
        "steps": result.steps,
        "metrics": result.metrics,
        "started_at": started,
        "finished_at": time.time(),
    }
    (output_dir / RUN_FILE).write_bytes(
        orjson.dumps(info, option=orjson.OPT_SORT_KEYS | orjson.OPT_INDENT_2)
    )
    return info


def _version(dist: str) -> str:
    try:
        return importlib.metadata.version(dist)
    except importlib.metadata.PackageNotFoundError:
        return "unknown"
