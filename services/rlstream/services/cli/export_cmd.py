"""``rlstream export``: a curated dataset in another tool's row format."""

from __future__ import annotations

from pathlib import Path

import orjson
import typer

from rlstream.curation.while_export import dataset_rows
from rlstream.jsonl import read_scored
from rlstream.services.cli.common import console, friendly_errors, require_files

app = typer.Typer(help="Write a curated dataset in another tool's format.", no_args_is_help=True)


@app.callback()
def _group() -> None:
    """Write a curated dataset in another tool's format."""


@app.command("while")
@friendly_errors
def export_while(
    dataset: Path = typer.Option(..., "--dataset", help="dataset directory (rlstream curate)"),
    src: Path = typer.Option(..., "--in", help="the graded rollouts JSONL it was curated from"),
    out: Path = typer.Option(..., "--out", help="While rows JSONL to write"),
) -> None:
    """Every kept rollout of DATASET as a While row (whileai's row-v1.json), with rlstream's
    reward, its reward function as label_source, and the task key as group_id.

    rlstream export while --dataset dataset/ --in scored.jsonl --out while.jsonl
    """
    require_files([dataset / "manifest.json", src])
    rows = dataset_rows(dataset, read_scored(src))
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_bytes(b"".join(orjson.dumps(r) + b"\n" for r in rows))
    groups = len({r["group_id"] for r in rows})
    console.print(f"wrote {len(rows)} While rows ({groups} task groups) → {out}")
