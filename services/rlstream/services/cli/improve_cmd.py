"""``rlstream improve run``: ingest, grade, profile and curate in one go.

The loop is :func:`rlstream.pipeline.batch.run_batch`; this module parses flags and prints.
"""

from __future__ import annotations

from pathlib import Path

import typer

from rlstream.curation import CurateOptions
from rlstream.grading import SpecResolver
from rlstream.pipeline.batch import run_batch
from rlstream.reporting import write_html_report
from rlstream.rewards.registry import available_rewards
from rlstream.services.cli import ingest_options as flags
from rlstream.services.cli.common import console, expand_inputs, friendly_errors
from rlstream.services.cli.curate_options import (
    GranularityOpt,
    HeldoutShareOpt,
    granularity_of,
    heldout_share_of,
)
from rlstream.services.cli.report import ConsoleReport

improve_app = typer.Typer(help="The whole batch pipeline in one command.", no_args_is_help=True)

EXAMPLES = """

[bold]Examples[/]

rlstream improve run --input logs/*.jsonl --reward customer_support --output out/

rlstream improve run --input 'logs/**/*.jsonl.gz' export.json --reward outcome --output out/

rlstream improve run --input agent_logs.jsonl --reward outcome --granularity turn --output out/

rlstream improve run --input runs.jsonl --messages-field traj --task-key-field task_id --label-field answer --reward gsm8k --output out/

OUTPUT gets transcripts.jsonl (+ rejects), scored.jsonl (+ failures), profile.json and profile.svg (histogram + pass@k curves), dataset/ (manifest.json, grpo.jsonl, dpo.jsonl, sft.jsonl, next_steps.md), ingest.json and report.html (the whole run on one page; rlstream report OUTPUT writes it again).
"""


@improve_app.command("run")
@friendly_errors
def improve_run(
    inputs: list[str] = typer.Option(
        ...,
        "--input",
        metavar="PATH",
        help="log files, folders or quoted globs; several may follow one --input",
    ),
    output: Path = typer.Option(..., "--output", help="folder for every stage's output"),
    more: list[str] = typer.Argument(
        None,
        metavar="PATH",
        help="more inputs (what the shell expands --input logs/*.jsonl into)",
        show_default=False,
    ),
    reward: str = typer.Option(
        None,
        "--reward",
        help="reward name(s), comma separated; one of: " + ", ".join(available_rewards()),
    ),
    reward_config: Path = typer.Option(None, "--reward-config", help="YAML agent -> rewards"),
    fmt: flags.FormatOpt = "auto",
    mapping: flags.MappingOpt = None,
    messages_field: flags.MessagesFieldOpt = None,
    id_field: flags.IdFieldOpt = None,
    task_key_field: flags.TaskKeyFieldOpt = None,
    outcome_field: flags.OutcomeFieldOpt = None,
    outcome_values: flags.OutcomeValuesOpt = None,
    label_field: flags.LabelFieldOpt = None,
    near_dup_merge: flags.NearDupOpt = False,
    max_rejects: flags.MaxRejectsOpt = None,
    band: tuple[float, float] = typer.Option((0.2, 0.8), help="curation pass-rate band"),
    heldout_share: HeldoutShareOpt = None,
    granularity: GranularityOpt = "auto",
) -> None:
    """Ingest → grade → profile → curate, writing every stage's file to OUTPUT."""
    specs = SpecResolver.from_options(reward, reward_config)
    options = flags.build_options(
        fmt, mapping, messages_field, id_field, task_key_field, outcome_field, label_field,
        near_dup_merge, max_rejects, outcome_values=outcome_values,
    )  # fmt: skip
    files = expand_inputs([*inputs, *(more or [])])
    with ConsoleReport() as report:
        curate_options = CurateOptions(
            band=band,
            heldout_share=heldout_share_of(heldout_share),
            granularity=granularity_of(granularity),
        )
        run_batch([(files, options)], specs, output, curate_options, report)
    console.print(f"report page → {write_html_report(output)}", soft_wrap=True)


improve_run.__doc__ = (improve_run.__doc__ or "") + EXAMPLES
