"""``NemoRLBackend``: plans a NeMo RL run; it never trains.

NeMo RL has no package on the index (a team installs it from a checkout with uv, on CUDA
GPUs with Ray), so rlstream can neither run nor test a NeMo RL run here. ``plan`` writes
what a team with NeMo RL installed runs: the config (keys checked against the pinned tag's
manifest), the converted dataset and the untested adapter (processor + environment);
``train`` refuses with that reason.
"""

from __future__ import annotations

import hashlib
from pathlib import Path
from typing import Any

import orjson

from rlstream.errors import ConfigError
from rlstream.grading import SpecResolver
from rlstream.training.config import Progress, RunResult, TrainConfig, TrainPlan, method_of
from rlstream.training.data import read_rows
from rlstream.training.nemo_rl import adapter
from rlstream.training.nemo_rl.pin import NEMO_RL_TAG, manifest
from rlstream.training.nemo_rl.plan_config import DATA_FILE, ENTRY, build, render
from rlstream.training.reward import gradeable, parse_label

#: where the plan's files go inside the run's output_dir
WORK_DIR = "nemo_rl"
PLAN_ONLY = (
    f"the nemo-rl backend only plans: NeMo RL ({NEMO_RL_TAG}) has no package rlstream can "
    "install or run here; run `rlstream train --backend nemo-rl --dry-run` and follow its "
    "'how to run' lines on a machine with NeMo RL installed"
)
#: the label format the adapter's environment reads
LABEL_FORMAT = "rlstream.nemo_rl.v1"


def _text(content: Any) -> str:
    if isinstance(content, str):
        return content
    return orjson.dumps(content).decode() if content is not None else ""


def convert(rows: list[dict[str, Any]]) -> bytes:
    """grpo.jsonl rows -> NeMo RL ``ResponseDataset`` rows: the prompt as plain
    role/content messages, then the label (prompt, tools, verifier context) as the last."""
    out: list[bytes] = []
    for row in rows:
        prompt = [{"role": m["role"], "content": _text(m.get("content"))} for m in row["prompt"]]
        label = {
            "format": LABEL_FORMAT,
            "messages": row["prompt"],
            "tools": row.get("tools") or [],
            "context": parse_label(row["label"]),
        }
        content = orjson.dumps(label, option=orjson.OPT_SORT_KEYS).decode()
        msgs = [*prompt, {"role": "assistant", "content": content}]
        out.append(orjson.dumps({"messages": msgs}, option=orjson.OPT_SORT_KEYS) + b"\n")
    return b"".join(out)


class NemoRLBackend:
    """NeMo RL, as a checked plan for one pinned tag."""

    name = "nemo-rl"

    def version(self) -> str:
        return f"nemo-rl {NEMO_RL_TAG} (plan only; commit {manifest().get('commit')})"

    def plan(
        self, dataset_dir: Path, base_model: str | Path, config: TrainConfig, output_dir: Path
    ) -> TrainPlan:
        method = method_of(config)
        if config.reward_config is not None:
            raise ConfigError(
                "--reward-config is not supported by the nemo-rl plan: its environment "
                "rebuilds each spec from its id"
            )
        rows, skipped = gradeable(read_rows(dataset_dir, "grpo"), SpecResolver())
        if method in ENTRY and not rows:
            raise ConfigError(
                f"{dataset_dir}: no GRPO row can be graded on fresh samples: {skipped}"
            )
        out = output_dir.absolute() / WORK_DIR
        local = Path(base_model)
        model = str(local.absolute()) if local.exists() else str(base_model)
        tree = build(method, config, model, out, len(rows))
        config_name = f"{method}.yaml"
        text = render(method, tree)
        source = adapter.render(NEMO_RL_TAG, ENTRY[method], config_name)
        data = convert(rows).decode()
        argv = [
            *("uv", "run", "python", str(out / adapter.FILE_NAME)),
            *(f"examples/{ENTRY[method]}", "--config", str(out / config_name)),
        ]
        how = [
            f"on a machine with NeMo RL {NEMO_RL_TAG} installed (its checkout, uv, CUDA GPUs)",
            "and rlstream installed in NeMo RL's environment (the adapter grades with it):",
            f"cd <NeMo RL checkout at {NEMO_RL_TAG}>",
            f"PYTHONPATH={out} " + " ".join(argv),
        ]
        summary = {
            "plan_only": True,
            "nemo_rl_tag": NEMO_RL_TAG,
            "nemo_rl_commit": manifest().get("commit"),
            "method": method,
            "prompts": len(rows),
            "skipped_rows": skipped,
            "entry": f"examples/{ENTRY[method]}",
            "config_sha256": hashlib.sha256(text.encode()).hexdigest(),
            "adapter_sha256": adapter.sha256_of(source),
            "tested_here": "config keys against the manifest; the adapter compiles. Not run.",
            "how_to_run": how,
        }
        files = {
            f"{WORK_DIR}/{config_name}": text,
            f"{WORK_DIR}/{DATA_FILE}": data,
            f"{WORK_DIR}/{adapter.FILE_NAME}": source,
        }
        return TrainPlan.of(
            self.name, method, (dataset_dir, base_model, output_dir), argv, summary, files
        )

    def train(
        self,
        dataset_dir: Path,
        base_model: str | Path,
        config: TrainConfig,
        output_dir: Path,
        progress: Progress | None = None,
    ) -> RunResult:
        raise ConfigError(PLAN_ONLY)


def write_plan_files(plan: TrainPlan) -> list[Path]:
    """Write a plan's files under its output_dir (``--dry-run`` of a plan-only backend)."""
    written = []
    for name, text in plan.files.items():
        path = Path(plan.output_dir) / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)
        written.append(path)
    return written
