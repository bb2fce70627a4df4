"""``VerlBackend``: the Backend protocol over the pinned verl's ``main_ppo`` (GRPO, GSPO,
PPO with a critic).

``plan`` needs nothing but the dataset (``rlstream train --backend verl --dry-run`` works
on a laptop). ``train`` fails closed: without the pinned verl (here or in the GPU image's
verl venv) it refuses in one line; otherwise it writes the planned files, re-checks their
sha256s on disk, runs ``main_ppo``, then merges the last FSDP checkpoint into a peft
adapter with ``python -m verl.model_merger merge`` and copies it to ``adapter/``.
"""

from __future__ import annotations

import re
import shutil
import time
from pathlib import Path
from typing import Any

import orjson

from rlstream.curation.writer import verify_dataset
from rlstream.errors import ConfigError
from rlstream.training.config import (
    METHOD_DEFAULTS,
    Progress,
    RunResult,
    TrainConfig,
    TrainMethod,
    TrainPlan,
    effective,
)
from rlstream.training.data import resolve_method
from rlstream.training.external import LOG_FILE, Prepared, run_logged, write_planned
from rlstream.training.verl import reward_file
from rlstream.training.verl.pin import MERGER, VERL_VERSION, check_installed, verl_python
from rlstream.training.verl.prepare import WORK_DIR, prepare

METRICS_FILE = "metrics.json"
_STEP_DIR = re.compile(r"^global_step_(\d+)$")


class VerlBackend:
    """verl's own ``main_ppo``, for one pinned release."""

    name = "verl"

    def version(self) -> str:
        return VERL_VERSION

    def _prepare(
        self, dataset_dir: Path, base_model: str | Path, config: TrainConfig, output_dir: Path
    ) -> Prepared:
        if config.device == "cpu":
            raise ConfigError("the verl backend needs CUDA GPUs; use --backend builtin on CPU")
        if config.reward_config is not None:
            raise ConfigError(
                "--reward-config is not supported by the verl backend: its reward file "
                "rebuilds each spec from its id inside the pod; use --backend builtin"
            )
        check_installed(required=False)  # a different installed release is refused even here
        method = config.method
        if method == "auto":
            method = resolve_method(verify_dataset(dataset_dir), "auto")
        resolved = config
        if method in METHOD_DEFAULTS:
            lr, beta = effective(config.model_copy(update={"method": method}))
            resolved = config.model_copy(update={"learning_rate": lr, "beta": beta})
        local = Path(base_model)
        model = str(local.absolute()) if local.exists() else str(base_model)
        return prepare(dataset_dir, model, method, resolved, output_dir.absolute())

    def plan(
        self, dataset_dir: Path, base_model: str | Path, config: TrainConfig, output_dir: Path
    ) -> TrainPlan:
        """The command, its overrides (in the summary) and the reward file."""
        p = self._prepare(dataset_dir, base_model, config, output_dir)
        files = {
            f"{WORK_DIR}/{path.name}": data.decode()
            for path, data in p.files.items()
            if path.name == reward_file.FILE_NAME
        }
        return TrainPlan.of(
            self.name,
            _method(p.method),
            (dataset_dir, base_model, output_dir),
            p.argv,
            {**p.summary, "files_sha256": p.sha256, "argv_sha256": p.argv_sha256},
            files,
        )

    def train(
        self,
        dataset_dir: Path,
        base_model: str | Path,
        config: TrainConfig,
        output_dir: Path,
        progress: Progress | None = None,
    ) -> RunResult:
        check_installed(required=True)
        python = verl_python()
        if python is None:  # check_installed found it, so this cannot happen
            raise ConfigError("verl is installed but no interpreter has it")
        p = self._prepare(dataset_dir, base_model, config, output_dir)
        work = output_dir / WORK_DIR
        write_planned(p, work, {reward_file.FILE_NAME: reward_file.verify})
        started = time.monotonic()
        code, tail = run_logged([python, *p.argv[1:]], output_dir, work / LOG_FILE)
        reason = f"verl exited with code {code}: {tail or 'no output'}" if code else None
        if reason is None:
            reason = export_adapter(python, work, output_dir / "adapter")
        ok = reason is None
        metrics: dict[str, Any] = {
            "backend": self.name,
            "verl_version": VERL_VERSION,
            "planned_steps": p.steps,
            "exit_code": code,
            "wall_time_s": round(time.monotonic() - started, 3),
            "log": f"{WORK_DIR}/{LOG_FILE}",
        }
        (output_dir / METRICS_FILE).write_bytes(
            orjson.dumps(metrics, option=orjson.OPT_SORT_KEYS | orjson.OPT_INDENT_2)
        )
        if ok and progress is not None:
            progress(p.steps, p.steps, {})
        return RunResult(
            run_id=output_dir.name,
            status="succeeded" if ok else "failed",
            backend=self.name,
            method=_method(p.method),
            output_dir=str(output_dir),
            adapter_dir=str(output_dir / "adapter") if ok else None,
            steps=p.steps if ok else 0,
            reason=reason,
            metrics=metrics,
        )


def last_checkpoint(checkpoints: Path) -> Path | None:
    """``global_step_<N>/actor`` with the highest N, or None."""
    found = [
        (int(m.group(1)), d)
        for d in (checkpoints.iterdir() if checkpoints.is_dir() else ())
        if (m := _STEP_DIR.match(d.name)) and (d / "actor").is_dir()
    ]
    return max(found)[1] / "actor" if found else None


def export_adapter(python: str, work: Path, adapter: Path) -> str | None:
    """Merge the last actor checkpoint into ``lora_adapter/`` and copy it to ``adapter``;
    returns why it could not, or None."""
    actor = last_checkpoint(work / "checkpoints")
    if actor is None:
        return "verl exited 0 but saved no checkpoint (checkpoints/global_step_*/actor)"
    merged = work / "merged"
    argv = [python, "-m", MERGER, "merge", "--backend", "fsdp"]
    argv += ["--local_dir", str(actor), "--target_dir", str(merged)]
    code, tail = run_logged(argv, work, work / LOG_FILE, append=True)
    lora = merged / "lora_adapter"
    if code != 0:
        return f"verl.model_merger exited with code {code}: {tail or 'no output'}"
    if not (lora / "adapter_model.safetensors").is_file():
        return f"verl.model_merger wrote no {lora}/adapter_model.safetensors"
    shutil.rmtree(adapter, ignore_errors=True)
    shutil.copytree(lora, adapter)
    return None


def _method(method: str) -> TrainMethod:
    if method not in ("grpo", "gspo", "ppo"):
        raise ConfigError(f"the verl backend does not train {method!r}")
    return method  # type: ignore[return-value]
