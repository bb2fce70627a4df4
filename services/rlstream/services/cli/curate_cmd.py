"""``rlstream curate``: graded rollouts -> a reproducible GRPO / DPO / SFT dataset."""

from __future__ import annotations

from pathlib import Path

import typer

from rlstream.curation import CurateOptions
from rlstream.pipeline.batch import curate_file
from rlstream.services.cli.common import friendly_errors, require_files, require_nonempty
from rlstream.services.cli.curate_options import (
    GranularityOpt,
    HeldoutShareOpt,
    granularity_of,
    heldout_share_of,
)
from rlstream.services.cli.report import BarStages, print_curation

EXAMPLES = """

[bold]Examples[/]

rlstream curate --in scored.jsonl --out dataset/

rlstream curate --in scored.jsonl --out dataset/ --band 0.1 0.9 --hack-scan reject

rlstream curate --in scored.jsonl --out dataset/ --heldout-share 0.2

rlstream curate --in scored.jsonl --out dataset/ --granularity turn

Writes manifest.json (hashes, counts, profile, lineage), grpo.jsonl, dpo.jsonl, sft.jsonl, heldout.jsonl and next_steps.md. A share of task keys (by hash of agent, reward spec and task key; default 10%, RLSTREAM_HELDOUT_SHARE) is held out: those prompts go only to heldout.jsonl, for `rlstream eval`. The same input always gives byte-identical files.
"""


@friendly_errors
def curate_command(
    src: Path = typer.Option(..., "--in", help="graded rollouts JSONL"),
    dest: Path = typer.Option(..., "--out", help="dataset output directory"),
    band: tuple[float, float] = typer.Option((0.2, 0.8), help="keep groups with pass rate in"),
    min_group_size: int = typer.Option(2, help="smallest group worth keeping"),
    hack_scan: str = typer.Option("report", help="report | reject | off"),
    near_dup_threshold: float = typer.Option(0.8, help="MinHash Jaccard for near duplicates"),
    heldout_share: HeldoutShareOpt = None,
    granularity: GranularityOpt = "auto",
) -> None:
    """Curate graded rollouts into a training dataset."""
    require_files([src])
    require_nonempty(src, "graded rollouts JSONL (from rlstream grade)")
    options = CurateOptions(
        band=band,
        min_group_size=min_group_size,
        hack_scan=hack_scan,
        near_dup_threshold=near_dup_threshold,
        heldout_share=heldout_share_of(heldout_share),
        granularity=granularity_of(granularity),
    )
    with BarStages() as bars:
        result, manifest = curate_file(src, dest, options, bars)
    print_curation(result, manifest, dest)


curate_command.__doc__ = (curate_command.__doc__ or "") + EXAMPLES
