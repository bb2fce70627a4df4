"""``OpenRLHFBackend``: the Backend protocol over the pinned OpenRLHF CLIs (GRPO, GSPO and
PPO with a critic through ``train_ppo_ray``; SFT and DPO through ``train_sft`` / ``train_dpo`` under DeepSpeed).

``plan`` needs nothing but the dataset (``rlstream train --backend openrlhf --dry-run``
works on a laptop). ``train`` fails closed: without the pinned openrlhf installed (it
needs CUDA; it is in the GPU image) it refuses in one line, and otherwise writes the
planned files, re-checks their sha256s on disk, and only then runs the command, its
output streamed to the Job's log and to ``openrlhf/train.log``.
"""

from __future__ import annotations

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
from rlstream.training.external import LOG_FILE, Prepared, launcher, run_logged, write_planned
from rlstream.training.openrlhf import agent_file, reward_file
from rlstream.training.openrlhf.pin import OPENRLHF_VERSION, check_installed
from rlstream.training.openrlhf.prepare import WORK_DIR, prepare

METRICS_FILE = "metrics.json"


class OpenRLHFBackend:
    """OpenRLHF's own CLIs, for one pinned release."""

    name = "openrlhf"

    def version(self) -> str:
        return OPENRLHF_VERSION

    def _prepare(
        self, dataset_dir: Path, base_model: str | Path, config: TrainConfig, output_dir: Path
    ) -> Prepared:
        if config.device == "cpu":
            raise ConfigError("the openrlhf backend needs CUDA GPUs; use --backend builtin on CPU")
        if config.reward_config is not None:
            raise ConfigError(
                "--reward-config is not supported by the openrlhf backend: its reward file "
                "rebuilds each spec from its id inside the pod; use --backend builtin"
            )
        check_installed(required=False)  # a different installed release is refused even here
        method = config.method
        if method == "auto":  # rlstream.training.train resolves it; a direct call may not
            method = resolve_method(verify_dataset(dataset_dir), "auto")
        resolved = config
        if method in METHOD_DEFAULTS:  # lr / beta left to the method: the builtin's defaults
            lr, beta = effective(config.model_copy(update={"method": method}))
            resolved = config.model_copy(update={"learning_rate": lr, "beta": beta})
        # the command runs in output_dir: every path in its argv is absolute
        local = Path(base_model)
        model = str(local.absolute()) if local.exists() else str(base_model)
        return prepare(dataset_dir, model, method, resolved, output_dir.absolute())

    def plan(
        self, dataset_dir: Path, base_model: str | Path, config: TrainConfig, output_dir: Path
    ) -> TrainPlan:
        """The command and the files it writes (GRPO: the reward file, or in an
        environment the agent file; the prompt file by path, row count and sha256)."""
        p = self._prepare(dataset_dir, base_model, config, output_dir)
        files = {
            f"{WORK_DIR}/{path.name}": data.decode()
            for path, data in p.files.items()
            if path.name in (reward_file.FILE_NAME, agent_file.FILE_NAME)
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
        p = self._prepare(dataset_dir, base_model, config, output_dir)
        exe = launcher(p.argv[0])
        work = output_dir / WORK_DIR
        write_planned(p, work, {reward_file.FILE_NAME: reward_file.verify})
        started = time.monotonic()
        code, tail = run_logged([exe, *p.argv[1:]], output_dir, work / LOG_FILE)
        wall = round(time.monotonic() - started, 3)
        adapter = output_dir / "adapter"
        saved = adapter.is_dir() and any(adapter.glob("adapter_model.*"))
        ok = code == 0 and saved
        reason = None
        if code != 0:
            reason = f"openrlhf exited with code {code}: {tail or 'no output'}"
        elif not saved:
            reason = "openrlhf exited 0 but saved no adapter (adapter/adapter_model.*)"
        metrics: dict[str, Any] = {
            "backend": self.name,
            "openrlhf_version": OPENRLHF_VERSION,
            "planned_steps": p.steps,
            "exit_code": code,
            "wall_time_s": wall,
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
            adapter_dir=str(adapter) if ok else None,
            steps=p.steps if ok else 0,
            reason=reason,
            metrics=metrics,
        )


def _method(method: str) -> TrainMethod:
    if method not in ("sft", "dpo", "grpo", "gspo", "ppo"):
        raise ConfigError(f"unknown method {method!r}")
    return method  # type: ignore[return-value]
