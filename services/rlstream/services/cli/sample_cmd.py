"""``rlstream sample``: write seeded, realistic production logs to play with."""

from __future__ import annotations

from pathlib import Path

import typer

from rlstream.sampledata import write_sample_logs
from rlstream.services.cli.common import console, friendly_errors


@friendly_errors
def sample(
    out: Path = typer.Option(Path("sample"), "--out", help="folder to write into"),
    seed: int = typer.Option(7, help="same seed, byte-identical files"),
    scale: int = typer.Option(1, help="multiply the number of tasks"),
) -> None:
    """Generate sample logs in every supported format, with a truth file.

    Support conversations with tool calls, maths questions and refund-policy decisions,
    several rollouts per task with known pass rates, planted PII and some malformed records.
    """
    manifest = write_sample_logs(out, seed=seed, scale=scale)
    console.print(f"wrote {len(manifest.files)} files to {out}/ (truth in {out}/truth.json)")
