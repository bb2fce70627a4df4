"""``rlstream grade``: apply rewards to ingested transcripts."""

from __future__ import annotations

from pathlib import Path

import typer

from rlstream.grading import SpecResolver
from rlstream.pipeline.batch import grade_file
from rlstream.rewards.registry import available_rewards
from rlstream.services.cli.common import friendly_errors, require_files, require_nonempty
from rlstream.services.cli.report import BarStages, print_grade

EXAMPLES = """

[bold]Examples[/]

rlstream grade --in transcripts.jsonl --out scored.jsonl --reward gsm8k

rlstream grade --in t.jsonl --out s.jsonl --reward customer_support:2,tool_calling

rlstream grade --in t.jsonl --out s.jsonl --reward-config rewards.yaml   # per agent

Rollouts a reward cannot grade (e.g. gsm8k without a gold label) are written with the reason to the failures file and counted; they never get a silent default score.
"""


@friendly_errors
def grade(
    src: Path = typer.Option(..., "--in", help="transcripts JSONL from `rlstream ingest`"),
    out: Path = typer.Option(..., "--out", help="graded rollouts JSONL"),
    reward: str = typer.Option(
        None,
        "--reward",
        help="reward name(s), comma separated, optional :weight; one of: "
        + ", ".join(available_rewards()),
    ),
    reward_config: Path = typer.Option(
        None, "--reward-config", help="YAML mapping agent -> rewards (see docs/rewards.md)"
    ),
    failures: Path = typer.Option(
        None, "--failures", help="where ungradable rollouts go [default: OUT.failures.jsonl]"
    ),
) -> None:
    """Grade transcripts with offline, versioned rewards."""
    require_files([src])
    # flags first: they fail before any reading
    specs = SpecResolver.from_options(reward, reward_config)
    require_nonempty(src, "transcripts JSONL (from rlstream ingest)")
    failures = failures or out.with_name(out.name + ".failures.jsonl")
    with BarStages() as bars:
        counts = grade_file(src, out, failures, specs, bars)
    print_grade(counts, out, failures)


grade.__doc__ = (grade.__doc__ or "") + EXAMPLES
