"""Everything a verl run needs, computed without touching a GPU or verl itself.

``prepare`` reads and verifies the dataset, keeps the GRPO rows a fresh sample can be
graded for (the builtin backend's probe), converts them to verl's columns, renders the
reward file and builds the overrides, every key checked against the pinned release's
manifest and the batch arithmetic checked as verl would. ``--dry-run`` prints this;
``train`` writes the files, re-checks every hash on disk and only then launches.
"""

from __future__ import annotations

from pathlib import Path

from rlstream.curation.writer import verify_dataset
from rlstream.errors import ConfigError, InputError
from rlstream.grading import SpecResolver
from rlstream.training.config import MethodChoice, TrainConfig
from rlstream.training.data import check_on_policy, resolve_method, train_rows
from rlstream.training.external import Prepared
from rlstream.training.reward import gradeable, parse_label
from rlstream.training.verl import reward_file
from rlstream.training.verl.batches import check_batches
from rlstream.training.verl.dataset import convert_grpo
from rlstream.training.verl.keys import parse_overrides
from rlstream.training.verl.overrides import (
    RunPaths,
    base_overrides,
    estimator,
    merge,
    samples_per_prompt,
)
from rlstream.training.verl.pin import ENTRY, VERL_VERSION

#: where the adapter's own files go inside the run's output_dir
WORK_DIR = "verl"
TRAIN_FILE = "train.jsonl"


def build_argv(
    model: str, method: str, config: TrainConfig, rows: int, paths: RunPaths, name: str
) -> tuple[list[str], int, bool]:
    """(``python3 -m verl.trainer.main_ppo`` argv, planned steps, critic used); every
    override checked against the manifest and the batch arithmetic."""
    overrides = merge(base_overrides(model, method, config, rows, paths, name), config.backend_args)
    steps, critic = check_batches(parse_overrides(overrides), rows)
    return ["python3", "-m", ENTRY, *overrides], steps, critic


def prepare(
    dataset_dir: Path, model: str, method: MethodChoice, config: TrainConfig, output_dir: Path
) -> Prepared:
    """Plan a run of ``model`` on ``dataset_dir`` writing into ``output_dir``."""
    manifest = verify_dataset(dataset_dir)
    chosen = resolve_method(manifest, method)
    estimator(chosen)  # sft / dpo refused with the reason
    if getattr(config, "environment", None):
        raise ConfigError(
            "the verl backend trains single-turn only; multi-turn environments run with "
            "--backend builtin or openrlhf"
        )
    if config.lora_dropout:
        raise ConfigError(
            "verl 0.9.1's FSDP LoRA has no dropout (workers/engine/fsdp/transformer_impl.py "
            "builds its LoraConfig without one); leave lora_dropout at 0 for --backend verl"
        )
    if config.num_generations < 2 and chosen != "ppo":
        raise ConfigError(f"{chosen} needs num_generations >= 2 (verl's grpo baseline)")
    resolved = config.model_copy(update={"method": chosen})
    check_on_policy(dataset_dir, manifest, resolved)  # --on-policy: that policy's rows only
    rows, skipped = gradeable(train_rows(dataset_dir, resolved), SpecResolver())
    if not rows:
        why = "; ".join(f"{n} x {reason}" for reason, n in sorted(skipped.items()))
        raise InputError(f"{dataset_dir}: no GRPO row can be graded ({why or 'no rows'})")
    specs = sorted({str(parse_label(r["label"])["reward_spec"]) for r in rows})
    train = convert_grpo(rows)
    reward = reward_file.render(specs)
    work = output_dir / WORK_DIR
    paths = RunPaths(
        train_file=work / TRAIN_FILE,
        reward_file=work / reward_file.FILE_NAME,
        checkpoints=work / "checkpoints",
    )
    argv, steps, critic = build_argv(model, chosen, config, train.rows, paths, output_dir.name)
    summary = {
        "backend": "verl",
        "verl_version": VERL_VERSION,
        "method": chosen,
        "dataset_id": manifest.dataset_id,
        "prompts": train.rows,
        "samples_per_prompt": samples_per_prompt(chosen, config),
        "planned_steps": steps,
        "critic": critic,
        "reward_specs": specs,
        "skipped_rows": skipped,
        "model": model,
    }
    files = {paths.train_file: train.data, paths.reward_file: reward}
    hashes = {paths.train_file: train.sha256, paths.reward_file: reward_file.sha256_of(reward)}
    return Prepared(chosen, argv, files, hashes, steps, summary)
