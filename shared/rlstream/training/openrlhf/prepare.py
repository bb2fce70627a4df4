"""Everything an OpenRLHF run needs, computed without touching a GPU or OpenRLHF itself.

``prepare`` reads and verifies the dataset and builds and checks the argv for the method:
GRPO converts grpo.jsonl and renders the reward file; SFT/DPO read the dataset's own
file. It returns the argv with every input file's sha256. ``--dry-run`` prints this;
``train`` writes the files, re-checks every hash on disk and only then launches.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from rlstream.curation.writer import verify_dataset
from rlstream.errors import ConfigError, InputError
from rlstream.grading import SpecResolver
from rlstream.training.config import RL_METHODS, MethodChoice, TrainConfig
from rlstream.training.data import check_on_policy, read_rows, resolve_method
from rlstream.training.external import Prepared
from rlstream.training.openrlhf import deepspeed_argv, reward_file
from rlstream.training.openrlhf.argv import RunPaths, build_argv
from rlstream.training.openrlhf.dataset import convert_grpo
from rlstream.training.openrlhf.flags import DPO, SFT
from rlstream.training.openrlhf.pin import OPENRLHF_VERSION
from rlstream.training.reward import gradeable, parse_label

#: where the adapter's own files go inside the run's output_dir
WORK_DIR = "openrlhf"
PROMPTS_FILE = "prompts.jsonl"


def _policy(config: TrainConfig, method: str) -> str | None:
    """The policy ``method``'s rows are restricted to (``TrainConfig.on_policy``), or None."""
    policy = getattr(config, "on_policy", None)
    return policy if method in getattr(config, "on_policy_methods", ()) else None


def on_policy_rows(
    rows: list[dict[str, Any]], config: TrainConfig, method: str = "grpo"
) -> list[dict[str, Any]]:
    policy = _policy(config, method)
    return rows if policy is None else [r for r in rows if r.get("policy") == policy]


def _gradeable(
    dataset_dir: Path, config: TrainConfig, method: str = "grpo"
) -> tuple[list[dict[str, Any]], dict[str, int], list[str]]:
    """The GRPO rows a fresh sample can be graded for (the builtin backend's probe: a spec
    rebuilt from its id grades the group's reference answer), why the others cannot, and
    the specs of the kept rows (the reward file accepts only those)."""
    rows, skipped = gradeable(
        on_policy_rows(read_rows(dataset_dir, "grpo"), config, method), SpecResolver()
    )
    specs = sorted({str(parse_label(r["label"])["reward_spec"]) for r in rows})
    return rows, skipped, specs


def prepare(
    dataset_dir: Path, model: str, method: MethodChoice, config: TrainConfig, output_dir: Path
) -> Prepared:
    """Plan a run of ``model`` on ``dataset_dir`` writing into ``output_dir``; ``auto``
    follows the dataset (:func:`rlstream.training.data.resolve_method`, as every path)."""
    manifest = verify_dataset(dataset_dir)
    chosen = resolve_method(manifest, method)
    if _policy(config, chosen) is not None:
        check_on_policy(dataset_dir, manifest, config.model_copy(update={"method": chosen}))
    if chosen in RL_METHODS and getattr(config, "environment", None):
        if chosen != "grpo":
            raise ConfigError(
                "the openrlhf backend runs environment (multi-turn) training as GRPO only, "
                f"not {chosen}; drop --environment or use --method grpo"
            )
        from rlstream.training.openrlhf.multiturn import grpo_env  # it imports this module

        return grpo_env(dataset_dir, manifest.dataset_id, model, config, output_dir)
    if chosen in RL_METHODS:
        return _grpo(dataset_dir, manifest.dataset_id, model, config, output_dir, chosen)
    if _policy(config, chosen) is not None:
        raise ConfigError(
            f"openrlhf trains {chosen} on {chosen}.jsonl as it is: on-policy rows are selected "
            "for grpo only here (use the builtin backend, or leave "
            f"{chosen} out of on_policy_methods)"
        )
    cli = SFT if chosen == "sft" else DPO
    file = f"{chosen}.jsonl"
    entry = manifest.files.get(file)
    if entry is None or entry.rows == 0:
        raise InputError(f"{dataset_dir}: {file} has no rows to train on")
    paths = deepspeed_argv.DeepSpeedPaths(
        data=dataset_dir.absolute() / file,
        adapter=output_dir / "adapter",
        checkpoints=output_dir / WORK_DIR / "checkpoints",
    )
    argv, steps = deepspeed_argv.build_argv(cli, model, config, entry.rows, paths)
    summary = {
        "backend": "openrlhf",
        "openrlhf_version": OPENRLHF_VERSION,
        "method": chosen,
        "dataset_id": manifest.dataset_id,
        "rows": entry.rows,
        "planned_steps": steps,
        "model": model,
    }
    return Prepared(chosen, argv, {}, {paths.data: entry.sha256}, steps, summary)


def _grpo(
    dataset_dir: Path,
    dataset_id: str,
    model: str,
    config: TrainConfig,
    output_dir: Path,
    method: str = "grpo",
) -> Prepared:
    """GRPO, GSPO or PPO: the converted prompt file and the reward file, both written by
    the run (PPO samples once per prompt: its baseline is the critic, not the group)."""
    if method != "ppo" and config.num_generations < 2:
        raise ConfigError("GRPO needs num_generations >= 2 (OpenRLHF's group_norm baseline)")
    rows, skipped, specs = _gradeable(dataset_dir, config, method)
    if not rows:
        why = "; ".join(f"{n} x {reason}" for reason, n in sorted(skipped.items()))
        raise InputError(f"{dataset_dir}: no GRPO row can be graded ({why or 'no rows'})")
    prompts = convert_grpo(rows)
    reward = reward_file.render(specs)
    work = output_dir / WORK_DIR
    paths = RunPaths(
        prompts=work / PROMPTS_FILE,
        reward_file=work / reward_file.FILE_NAME,
        adapter=output_dir / "adapter",
        checkpoints=work / "checkpoints",
    )
    argv, steps = build_argv(model, config, prompts.rows, paths, method)
    hashes = {paths.prompts: prompts.sha256, paths.reward_file: reward_file.sha256_of(reward)}
    summary = {
        "backend": "openrlhf",
        "openrlhf_version": OPENRLHF_VERSION,
        "method": method,
        "dataset_id": dataset_id,
        "prompts": prompts.rows,
        "num_generations": 1 if method == "ppo" else config.num_generations,
        "planned_steps": steps,
        "reward_specs": specs,
        "skipped_rows": skipped,
        "model": model,
    }
    files = {paths.prompts: prompts.data, paths.reward_file: reward}
    return Prepared(method, argv, files, hashes, steps, summary)
