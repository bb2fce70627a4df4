"""``OpenRLHFBackend``: the Backend protocol over the pinned OpenRLHF CLI.

``plan`` needs nothing but the dataset (``rlstream train --backend openrlhf --dry-run``
works on a laptop). ``train`` fails closed: without the pinned openrlhf installed (it
needs CUDA; it is in the GPU image) it refuses in one line, and otherwise writes the
planned files, re-checks their sha256s on disk, and only then runs the command, its
output streamed to the Job's log and to ``openrlhf/train.log``.
"""

from __future__ import annotations

import hashlib
import os
import subprocess
import sys
import time
from collections import deque
from pathlib import Path
from typing import Any

import orjson

from rlstream.errors import ConfigError
from rlstream.training.config import Progress, RunResult, TrainConfig, TrainPlan
from rlstream.training.openrlhf import reward_file
from rlstream.training.openrlhf.pin import OPENRLHF_VERSION, check_installed
from rlstream.training.openrlhf.prepare import PROMPTS_FILE, WORK_DIR, Prepared, prepare

#: GRPO's learning rate and KL strength when the config leaves them to the method
#: (the builtin backend's GRPO defaults: a LoRA-sized rate, no reference model)
GRPO_DEFAULTS = {"learning_rate": 5e-5, "beta": 0.0}
PLAN_FILE = "plan.json"
LOG_FILE = "train.log"
METRICS_FILE = "metrics.json"


class OpenRLHFBackend:
    """GRPO through ``python3 -m openrlhf.cli.train_ppo_ray``, for one pinned release."""

    name = "openrlhf"

    def version(self) -> str:
        return OPENRLHF_VERSION

    def _prepare(
        self, dataset_dir: Path, base_model: str | Path, config: TrainConfig, output_dir: Path
    ) -> Prepared:
        if config.device == "cpu":
            raise ConfigError("the openrlhf backend needs CUDA GPUs; use --backend builtin on CPU")
        check_installed(required=False)  # a different installed release is refused even here
        unset = {k: v for k, v in GRPO_DEFAULTS.items() if getattr(config, k) is None}
        resolved = config.model_copy(update=unset)
        # the command runs in output_dir: every path in its argv is absolute
        local = Path(base_model)
        model = str(local.absolute()) if local.exists() else str(base_model)
        return prepare(dataset_dir, model, config.method, resolved, output_dir.absolute())

    def plan(
        self, dataset_dir: Path, base_model: str | Path, config: TrainConfig, output_dir: Path
    ) -> TrainPlan:
        """The command and the reward file; the prompt file by path, row count and sha256."""
        p = self._prepare(dataset_dir, base_model, config, output_dir)
        reward = next(d for path, d in p.files.items() if path.name == reward_file.FILE_NAME)
        return TrainPlan(
            backend=self.name,
            method="grpo",
            base_model=str(base_model),
            dataset_dir=str(dataset_dir),
            output_dir=str(output_dir),
            argv=tuple(p.argv),
            files={f"{WORK_DIR}/{reward_file.FILE_NAME}": reward.decode()},
            summary={
                **p.summary,
                "files_sha256": p.sha256,
                "argv_sha256": p.argv_sha256,
                "prompts_file": f"{WORK_DIR}/{PROMPTS_FILE}",
            },
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
        write_planned(p, output_dir)
        started = time.monotonic()
        code, tail = run_logged([sys.executable, *p.argv[1:]], output_dir)
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
            method="grpo",
            output_dir=str(output_dir),
            adapter_dir=str(adapter) if ok else None,
            steps=p.steps if ok else 0,
            reason=reason,
            metrics=metrics,
        )


def write_planned(p: Prepared, output_dir: Path) -> None:
    """Write the planned files and plan.json, then re-read and check every sha256."""
    for path, data in p.files.items():
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(data)
    work = output_dir / WORK_DIR
    record = {"argv": p.argv, "argv_sha256": p.argv_sha256, "sha256": p.sha256, **p.summary}
    (work / PLAN_FILE).write_bytes(orjson.dumps(record, option=orjson.OPT_INDENT_2))
    reward_file.verify(work / reward_file.FILE_NAME, p.sha256[reward_file.FILE_NAME])
    got = hashlib.sha256((work / PROMPTS_FILE).read_bytes()).hexdigest()
    if got != p.sha256[PROMPTS_FILE]:
        raise ConfigError(f"{work / PROMPTS_FILE}: sha256 {got} is not the planned one")


def run_logged(argv: list[str], output_dir: Path) -> tuple[int, str]:
    """Run ``argv`` in ``output_dir``; its output goes to our stdout (the Job log) and to
    openrlhf/train.log. Returns the exit code and the last non-empty output line."""
    env = {**os.environ, "PYTHONUNBUFFERED": "1"}
    last: deque[str] = deque(maxlen=1)
    with (
        (output_dir / WORK_DIR / LOG_FILE).open("w", encoding="utf-8") as log,
        subprocess.Popen(
            argv,
            cwd=output_dir,
            env=env,
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            text=True,
            errors="replace",
        ) as proc,
    ):
        assert proc.stdout is not None
        for line in proc.stdout:
            log.write(line)
            sys.stdout.write(line)
            if line.strip():
                last.append(line.strip()[:500])
        code = proc.wait()
    return code, last[0] if last else ""
