"""Everything an OpenRLHF run needs, computed without touching a GPU or OpenRLHF itself.

``prepare`` reads and verifies the dataset, converts grpo.jsonl, renders the reward file,
builds and checks the argv, and returns them with their sha256s. ``--dry-run`` prints
this; ``train`` writes it, re-checks the hashes on disk and only then launches.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import orjson

from rlstream.curation.writer import verify_dataset
from rlstream.errors import ConfigError, InputError
from rlstream.training.openrlhf import reward_file
from rlstream.training.openrlhf.argv import GrpoConfig, RunPaths, build_argv
from rlstream.training.openrlhf.dataset import convert_grpo
from rlstream.training.openrlhf.pin import OPENRLHF_VERSION
from rlstream.training.openrlhf.reward_runtime import spec_from_id

#: where the adapter's own files go inside the run's output_dir
WORK_DIR = "openrlhf"
PROMPTS_FILE = "prompts.jsonl"


class MethodError(ConfigError):
    """The openrlhf backend does not drive this training method."""

    code = "openrlhf_method"


@dataclass(frozen=True)
class Prepared:
    """The argv, the files to write (path -> bytes) and their hashes, and a summary."""

    argv: list[str]
    files: dict[Path, bytes]
    sha256: dict[str, str]
    steps: int
    summary: dict[str, Any] = field(default_factory=dict)

    @property
    def argv_sha256(self) -> str:
        return hashlib.sha256(orjson.dumps(self.argv)).hexdigest()


def resolve_method(requested: str, recommended: str) -> str:
    """GRPO only: OpenRLHF's SFT/DPO are separate deepspeed CLIs this adapter does not drive."""
    method = recommended if requested == "auto" else requested
    if method != "grpo":
        how = f"the dataset recommends {method}" if requested == "auto" else f"--method {method}"
        raise MethodError(
            f"{how}: the openrlhf backend runs only GRPO (openrlhf.cli.train_ppo_ray); "
            "use --backend builtin for sft/dpo, or --method grpo"
        )
    return method


def _reward_spec(prompts: bytes) -> str:
    """The one reward spec every GRPO row was graded with (the labels name it)."""
    specs = set()
    for line in prompts.splitlines():
        context = orjson.loads(orjson.loads(line)["label"])["context"]
        specs.add(context.get("reward_spec"))
    if len(specs) != 1 or not isinstance(next(iter(specs)), str):
        raise InputError(f"GRPO rows must share one reward spec, found {sorted(map(str, specs))}")
    spec_id: str = specs.pop()
    spec_from_id(spec_id)  # refuse now, not in the pod, a spec that cannot be rebuilt
    return spec_id


def prepare(
    dataset_dir: Path, model: str, method: str, config: GrpoConfig, output_dir: Path
) -> Prepared:
    """Plan a GRPO run of ``model`` on ``dataset_dir`` writing into ``output_dir``."""
    manifest = verify_dataset(dataset_dir)
    resolve_method(method, manifest.method)
    if config.num_generations < 2:
        raise ConfigError("GRPO needs num_generations >= 2 (OpenRLHF's group_norm baseline)")
    prompts = convert_grpo(dataset_dir / "grpo.jsonl")
    if prompts.rows == 0:
        raise InputError(f"{dataset_dir}: grpo.jsonl has no prompts to train on")
    spec_id = _reward_spec(prompts.data)
    reward = reward_file.render(spec_id)
    work = output_dir / WORK_DIR
    paths = RunPaths(
        prompts=work / PROMPTS_FILE,
        reward_file=work / reward_file.FILE_NAME,
        adapter=output_dir / "adapter",
        checkpoints=work / "checkpoints",
    )
    argv, steps = build_argv(model, config, prompts.rows, paths)
    hashes = {PROMPTS_FILE: prompts.sha256, reward_file.FILE_NAME: reward_file.sha256_of(reward)}
    summary = {
        "backend": "openrlhf",
        "openrlhf_version": OPENRLHF_VERSION,
        "method": "grpo",
        "dataset_id": manifest.dataset_id,
        "prompts": prompts.rows,
        "num_generations": config.num_generations,
        "planned_steps": steps,
        "reward_spec": spec_id,
        "model": model,
    }
    return Prepared(
        argv=argv,
        files={paths.prompts: prompts.data, paths.reward_file: reward},
        sha256=hashes,
        steps=steps,
        summary=summary,
    )
