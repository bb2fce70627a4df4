"""``rlstream curate``: graded rollouts -> a reproducible GRPO / DPO / SFT dataset."""

from __future__ import annotations

from pathlib import Path

import typer

from rlstream.curation import CurateOptions, CurationResult, Manifest, curate, write_dataset
from rlstream.jsonl import read_scored
from rlstream.services.cli.common import (
    console,
    friendly_errors,
    progress,
    require_files,
    require_nonempty,
)
from rlstream.settings import load_settings

EXAMPLES = """

[bold]Examples[/]

rlstream curate --in scored.jsonl --out dataset/

rlstream curate --in scored.jsonl --out dataset/ --band 0.1 0.9 --hack-scan reject

rlstream curate --in scored.jsonl --out dataset/ --heldout-share 0.2

Writes manifest.json (hashes, counts, profile, lineage), grpo.jsonl, dpo.jsonl, sft.jsonl, heldout.jsonl and next_steps.md. A share of task keys (by hash of agent, reward spec and task key; default 10%, RLSTREAM_HELDOUT_SHARE) is held out: those prompts go only to heldout.jsonl, for `rlstream eval`. The same input always gives byte-identical files.
"""


def curate_file(src: Path, dest: Path, options: CurateOptions) -> tuple[CurationResult, Manifest]:
    with progress("reading graded rollouts") as advance:
        rollouts = []
        for s in read_scored(src):
            rollouts.append(s)
            advance(1)
    result = curate(rollouts, options)
    return result, write_dataset(result, dest)


def summarise(result: CurationResult, manifest: Manifest, dest: Path) -> None:
    console.print(
        f"kept [bold]{len(result.kept):,}[/] groups / {result.kept_rollouts:,} rollouts of "
        f"{result.input_rollouts:,}; method: [bold]{manifest.method}[/] ({manifest.method_reason})"
    )
    for reason, n in sorted({**result.dropped_groups, **result.dropped_rollouts}.items()):
        if n:
            console.print(f"  dropped {reason}: {n:,}")
    if result.heldout:
        console.print(
            f"  held out for evaluation: {len(result.heldout):,} task keys → heldout.jsonl"
        )
    console.print(f"dataset [bold]{manifest.dataset_id[:16]}[/] → {dest}  (see next_steps.md)")


@friendly_errors
def curate_command(
    src: Path = typer.Option(..., "--in", help="graded rollouts JSONL"),
    dest: Path = typer.Option(..., "--out", help="dataset output directory"),
    band: tuple[float, float] = typer.Option((0.2, 0.8), help="keep groups with pass rate in"),
    min_group_size: int = typer.Option(2, help="smallest group worth keeping"),
    hack_scan: str = typer.Option("report", help="report | reject | off"),
    near_dup_threshold: float = typer.Option(0.8, help="MinHash Jaccard for near duplicates"),
    heldout_share: float | None = typer.Option(
        None,
        help="share of task keys held out for evaluation [default: RLSTREAM_HELDOUT_SHARE or 0.1]",
    ),
) -> None:
    """Curate graded rollouts into a training dataset."""
    require_files([src])
    require_nonempty(src, "graded rollouts JSONL (from rlstream grade)")
    options = CurateOptions(
        band=band,
        min_group_size=min_group_size,
        hack_scan=hack_scan,
        near_dup_threshold=near_dup_threshold,
        heldout_share=load_settings().heldout_share if heldout_share is None else heldout_share,
    )
    result, manifest = curate_file(src, dest, options)
    summarise(result, manifest, dest)


curate_command.__doc__ = (curate_command.__doc__ or "") + EXAMPLES
