"""Multi-turn GRPO on OpenRLHF: the prompt file of environment tasks and the agent file.

Each grpo.jsonl row is a task (as on the builtin backend,
:func:`rlstream.training.builtin.multiturn.task_of`); its prompt is the environment's
opening (reset once here, under the deadline) and its label carries the task
(:func:`rlstream.environments.openrlhf_agent.task_label`), because OpenRLHF passes only
the prompt and the label to the agent. The argv names the agent file with
``--train.agent_func_path`` instead of a reward file, every flag checked against the
pinned release's manifest like any other run.
"""

from __future__ import annotations

import hashlib
from pathlib import Path
from typing import Any

import orjson

from rlstream.environments.openrlhf_agent import task_label
from rlstream.environments.render import message_dict
from rlstream.errors import ConfigError, InputError
from rlstream.training.builtin.multiturn import task_openings
from rlstream.training.config import TrainConfig
from rlstream.training.data import read_rows
from rlstream.training.external import Prepared
from rlstream.training.openrlhf import agent_file
from rlstream.training.openrlhf.argv import RunPaths, build_argv
from rlstream.training.openrlhf.pin import OPENRLHF_VERSION
from rlstream.training.openrlhf.prepare import PROMPTS_FILE, WORK_DIR, on_policy_rows


def env_prompts(
    config: TrainConfig, rows: list[dict[str, Any]]
) -> tuple[bytes, int, dict[str, int]]:
    """(prompt file bytes, rows, skipped rows by reason)."""
    _, opened, skipped = task_openings(config, rows)
    lines = [
        orjson.dumps(
            {"prompt": [message_dict(m) for m in msgs], "label": task_label(task)},
            option=orjson.OPT_SORT_KEYS,
        )
        + b"\n"
        for task, msgs in opened
    ]
    return b"".join(lines), len(lines), skipped


def grpo_env(
    dataset_dir: Path, dataset_id: str, model: str, config: TrainConfig, output_dir: Path
) -> Prepared:
    """The Prepared run: prompts.jsonl (tasks) + agent_func.py, argv checked."""
    if config.num_generations < 2:
        raise ConfigError("GRPO needs num_generations >= 2 (OpenRLHF's group_norm baseline)")
    assert config.environment is not None
    data, n, skipped = env_prompts(config, on_policy_rows(read_rows(dataset_dir, "grpo"), config))
    if not n:
        why = "; ".join(f"{k} x {r}" for r, k in sorted(skipped.items()))
        raise InputError(f"{dataset_dir}: no environment task to train on ({why or 'no rows'})")
    agent = agent_file.render(
        config.environment, dict(config.environment_options), config.max_turns, config.env_timeout_s
    )
    work = output_dir / WORK_DIR
    paths = RunPaths(
        prompts=work / PROMPTS_FILE,
        reward_file=work / agent_file.FILE_NAME,
        adapter=output_dir / "adapter",
        checkpoints=work / "checkpoints",
        agent_file=work / agent_file.FILE_NAME,
    )
    argv, steps = build_argv(model, config, n, paths)
    hashes = {
        paths.prompts: hashlib.sha256(data).hexdigest(),
        work / agent_file.FILE_NAME: hashlib.sha256(agent).hexdigest(),
    }
    summary = {
        "backend": "openrlhf",
        "openrlhf_version": OPENRLHF_VERSION,
        "method": "grpo",
        "multi_turn": True,
        "environment": config.environment,
        "max_turns": config.max_turns,
        "dataset_id": dataset_id,
        "prompts": n,
        "num_generations": config.num_generations,
        "planned_steps": steps,
        "skipped_rows": skipped,
        "model": model,
    }
    files = {paths.prompts: data, work / agent_file.FILE_NAME: agent}
    return Prepared("grpo", argv, files, hashes, steps, summary)
