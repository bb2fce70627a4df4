"""``rlstream improve run``: ingest, grade, profile and curate in one go."""

from __future__ import annotations

from pathlib import Path

import orjson
import typer

from rlstream.curation import CurateOptions
from rlstream.ingest import IngestOptions
from rlstream.metrics import Profile, render_profile
from rlstream.metrics.plot import profile_svg
from rlstream.rewards.registry import available_rewards
from rlstream.services.cli.common import console, expand_inputs, friendly_errors, out
from rlstream.services.cli.curate_cmd import curate_file, summarise
from rlstream.services.cli.grade_cmd import SpecResolver, resolve_specs, run_grade
from rlstream.services.cli.ingest_cmd import (
    FormatOpt,
    IdFieldOpt,
    LabelFieldOpt,
    MappingOpt,
    MaxRejectsOpt,
    MessagesFieldOpt,
    NearDupOpt,
    OutcomeFieldOpt,
    OutcomeValuesOpt,
    TaskKeyFieldOpt,
    build_options,
    print_summary,
    run_ingest,
)
from rlstream.services.cli.profile_cmd import profile_file

improve_app = typer.Typer(help="The whole batch pipeline in one command.", no_args_is_help=True)

EXAMPLES = """

[bold]Examples[/]

rlstream improve run --input logs/*.jsonl --reward customer_support --output out/

rlstream improve run --input 'logs/**/*.jsonl.gz' export.json --reward outcome --output out/

rlstream improve run --input runs.jsonl --messages-field traj --task-key-field task_id --label-field answer --reward gsm8k --output out/

OUTPUT gets transcripts.jsonl (+ rejects), scored.jsonl (+ failures), profile.json and profile.svg (histogram + pass@k curves), dataset/ (manifest.json, grpo.jsonl, dpo.jsonl, sft.jsonl, next_steps.md).
"""


def run_pipeline(
    batches: list[tuple[list[Path], IngestOptions]],
    specs: SpecResolver,
    output: Path,
    curate_options: CurateOptions,
) -> Profile:
    """Each batch is (files, how to read them); all land in one transcripts file."""
    output.mkdir(parents=True, exist_ok=True)
    transcripts, rejects = output / "transcripts.jsonl", output / "rejects.jsonl"
    if len(batches) == 1:
        files, options = batches[0]
        print_summary(run_ingest(files, transcripts, rejects, options), transcripts, rejects)
    else:
        with transcripts.open("wb") as t_out, rejects.open("wb") as r_out:
            for i, (files, options) in enumerate(batches):
                part_t, part_r = output / f".part{i}.jsonl", output / f".part{i}.rejects.jsonl"
                print_summary(run_ingest(files, part_t, part_r, options), transcripts, rejects)
                for part, sink in ((part_t, t_out), (part_r, r_out)):
                    sink.write(part.read_bytes())
                    part.unlink()
    scored = output / "scored.jsonl"
    counts = run_grade(transcripts, scored, output / "scored.failures.jsonl", specs)
    console.print(
        f"graded {counts['graded']:,} rollouts ({counts['passed']:,} pass), "
        f"{counts['failed']:,} ungradable → scored.failures.jsonl"
    )
    profile = profile_file(scored)
    (output / "profile.json").write_bytes(
        orjson.dumps(profile.to_json_dict(), option=orjson.OPT_INDENT_2 | orjson.OPT_SORT_KEYS)
    )
    out.print(render_profile(profile))
    (output / "profile.svg").write_text(profile_svg(profile, curate_options.band))
    result, manifest = curate_file(scored, output / "dataset", curate_options)
    summarise(result, manifest, output / "dataset")
    return profile


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
    fmt: FormatOpt = "auto",
    mapping: MappingOpt = None,
    messages_field: MessagesFieldOpt = None,
    id_field: IdFieldOpt = None,
    task_key_field: TaskKeyFieldOpt = None,
    outcome_field: OutcomeFieldOpt = None,
    outcome_values: OutcomeValuesOpt = None,
    label_field: LabelFieldOpt = None,
    near_dup_merge: NearDupOpt = False,
    max_rejects: MaxRejectsOpt = None,
    band: tuple[float, float] = typer.Option((0.2, 0.8), help="curation pass-rate band"),
) -> None:
    """Ingest → grade → profile → curate, writing every stage's file to OUTPUT."""
    specs = resolve_specs(reward, reward_config)
    options = build_options(
        fmt, mapping, messages_field, id_field, task_key_field, outcome_field, label_field,
        near_dup_merge, max_rejects, outcome_values=outcome_values,
    )  # fmt: skip
    files = expand_inputs([*inputs, *(more or [])])
    run_pipeline([(files, options)], specs, output, CurateOptions(band=band))


improve_run.__doc__ = (improve_run.__doc__ or "") + EXAMPLES
