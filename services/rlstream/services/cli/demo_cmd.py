"""``rlstream demo``: the main job on embedded defaults, from nothing to a dataset."""

from __future__ import annotations

from pathlib import Path

import typer

from rlstream.curation import CurateOptions
from rlstream.sampledata import write_sample_logs
from rlstream.services.cli.common import console, friendly_errors
from rlstream.services.cli.grade_cmd import resolve_specs
from rlstream.services.cli.improve_cmd import run_pipeline
from rlstream.services.cli.ingest_cmd import build_options

CUSTOM = "custom.jsonl"


@friendly_errors
def demo(
    folder: Path = typer.Option(Path("demo"), "--dir", help="where logs and outputs go"),
    seed: int = typer.Option(7, help="sample-data seed"),
    scale: int = typer.Option(1, help="multiply the number of tasks"),
) -> None:
    """Generate sample production logs, then run the whole pipeline on them.

    Writes DIR/logs/ (every supported format, with planted PII and malformed records) and
    DIR/out/ (transcripts, graded rollouts, profile, curated dataset with next_steps.md).
    """
    manifest = write_sample_logs(folder, seed=seed, scale=scale)
    console.print(
        f"[bold]1/2[/] wrote {manifest.conversations:,} sample conversations in "
        f"{len(manifest.files)} files → {folder}/logs/"
    )
    logs = sorted((folder / "logs").iterdir())
    standard = [p for p in logs if p.name != CUSTOM]
    custom = [p for p in logs if p.name == CUSTOM]
    batches = [(standard, build_options())]
    if custom:
        batches.append((custom, build_options(mapping_file=folder / "custom_mapping.yaml")))
    specs = resolve_specs(None, folder / "rewards.yaml")
    console.print("[bold]2/2[/] ingest → grade → profile → curate")
    run_pipeline(batches, specs, folder / "out", CurateOptions())
    console.print(f"done: see {folder}/out/dataset/next_steps.md")
