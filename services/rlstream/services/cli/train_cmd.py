"""``rlstream train``: checks a dataset; the training backends are not in this release yet."""

from __future__ import annotations

from pathlib import Path

import typer

from rlstream.curation import verify_dataset
from rlstream.services.cli.common import EXIT_USAGE, console, friendly_errors


@friendly_errors
def train(
    dataset: Path = typer.Option(..., "--dataset", help="a dataset folder from `rlstream curate`"),
    method: str = typer.Option("grpo", "--method", help="grpo | dpo | sft"),
) -> None:
    """Verify a curated dataset for training (backends: TRL built-in, OpenRLHF on GPU).

    This release verifies the dataset (every file's sha256 against manifest.json) and then
    stops: the TRL and OpenRLHF backends and the Kubernetes launcher come with the training
    work. Until then, next_steps.md in the dataset folder has the exact TRL / OpenRLHF usage.
    """
    manifest = verify_dataset(dataset)
    file = f"{method}.jsonl"
    if file not in manifest.files:
        console.print(
            f"[bold red]error:[/] {dataset} has no {file}; it has {sorted(manifest.files)}"
        )
        raise typer.Exit(EXIT_USAGE)
    console.print(
        f"dataset {manifest.dataset_id[:16]} verified ({file}: {manifest.files[file].rows} rows). "
        "Training backends are not part of this release; see "
        f"{dataset / 'next_steps.md'} for the TRL / OpenRLHF commands."
    )
    raise typer.Exit(EXIT_USAGE)
