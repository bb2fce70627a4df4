"""``rlstream retention run``: apply the retention policy once (the curator does it every
``RLSTREAM_RETENTION_INTERVAL_S``); ``--dry-run`` only counts."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Annotated

import typer

from rlstream.launch.settings import LaunchSettings
from rlstream.retention import RetentionPolicy, RetentionReport, RetentionSettings, apply_retention
from rlstream.services.cli.common import friendly_errors, out
from rlstream.services.cli.db import DataDirOpt, DsnOpt, _dsn
from rlstream.storage import Store, check_schema

RUN_HELP = """Apply the retention policy once: delete closed turn buffers and pending rollouts past their period, prune old dataset releases (their training files) and remove the folders of failed or rejected runs.

The policy is the curator's: RLSTREAM_RETENTION_* (0 keeps a kind for ever). Nothing in the lineage of a model that holds an alias or was ever promoted is touched; files only below the dataset and runs folders. Dead letters and other Kafka records expire by their topic's retention.ms. See docs/retention.md.

[bold]Examples[/]

rlstream retention run --dry-run   (count only: what a pass would remove now)

rlstream retention run

RLSTREAM_RETENTION_PENDING_ROLLOUTS_S=0 rlstream retention run   (keep the pending pool)

rlstream retention run --dsn postgresql://rlstream@db/rlstream --datasets-dir /data/datasets --runs-dir /data/runs
"""

app = typer.Typer(
    name="retention",
    help="Data retention: apply the RLSTREAM_RETENTION_* policy once (the curator runs it "
    "periodically).",
    no_args_is_help=True,
    pretty_exceptions_enable=False,
    rich_markup_mode="rich",
)


async def _run(
    dsn: str, policy: RetentionPolicy, datasets: Path, runs: Path, dry_run: bool
) -> RetentionReport:
    await check_schema(dsn)  # a deleting command never runs against a schema it does not know
    store = await Store.connect(dsn, max_size=2)
    try:
        return await apply_retention(
            store, policy, dataset_roots=[datasets], run_roots=[runs], dry_run=dry_run
        )
    finally:
        await store.close()


@app.command("run")
@friendly_errors
def run_cmd(
    dry_run: Annotated[
        bool, typer.Option("--dry-run", help="count what would be removed; remove nothing")
    ] = False,
    datasets_dir: Annotated[
        Path | None,
        typer.Option(
            "--datasets-dir",
            help="the only folder releases are pruned in (default: RLSTREAM_DATASET_DIR, "
            "else <data dir>/datasets)",
        ),
    ] = None,
    runs_dir: Annotated[
        Path | None,
        typer.Option(
            "--runs-dir",
            help="the only folder run folders are removed from (default: RLSTREAM_RUNS_DIR, "
            "else <data dir>/runs)",
        ),
    ] = None,
    dsn: str | None = DsnOpt,
    data_dir: Path | None = DataDirOpt,
) -> None:
    settings = RetentionSettings()
    launch = LaunchSettings()
    if data_dir is not None:
        settings = settings.model_copy(update={"data_dir": data_dir})
        launch = launch.model_copy(update={"data_dir": data_dir})
    policy = settings.retention_policy()
    datasets = datasets_dir or settings.datasets_path()
    runs = runs_dir or launch.runs_path()
    target = _dsn(dsn, data_dir, settings)
    out.print(f"policy: {policy.describe()}", markup=False, highlight=False, soft_wrap=True)
    report = asyncio.run(_run(target, policy, datasets, runs, dry_run))
    for line in report.lines():
        out.print(line, markup=False, highlight=False, soft_wrap=True)
    if dry_run:
        out.print("dry run: nothing was removed", markup=False, highlight=False, soft_wrap=True)


run_cmd.__doc__ = RUN_HELP
