"""``rlstream ingest``: any supported log shape -> redacted, task-keyed transcripts."""

from __future__ import annotations

from pathlib import Path

import typer

from rlstream.errors import ConfigError
from rlstream.pipeline.batch import ingest_file
from rlstream.services.cli.common import expand_inputs, friendly_errors
from rlstream.services.cli.ingest_options import (
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
)
from rlstream.services.cli.report import BarStages, print_ingest

EXAMPLES = """

[bold]Examples[/]

rlstream ingest logs/*.jsonl --out transcripts.jsonl

rlstream ingest export.json.gz --format anthropic --out t.jsonl --rejects bad.jsonl

rlstream ingest raw.jsonl --out t.jsonl --messages-field traj --id-field meta.conv_id --task-key-field task_id --outcome-field reward --label-field answer

rlstream ingest raw.jsonl --out t.jsonl --mapping mapping.yaml

Formats: openai (chat, legacy functions, Responses API), anthropic, sharegpt, langchain (LangSmith runs), otel (GenAI / OpenInference spans), gemini, while (While rows, whileai's row-v1.json), canonical; --format auto detects per record. JSON arrays, JSONL and gzip are read as a stream. PII (emails, phones, cards, IBANs, SSNs, IPs, keys, tokens) is redacted before writing.
"""


@friendly_errors
def ingest(
    inputs: list[str] = typer.Argument(
        ..., metavar="PATH...", help="log files (.json, .jsonl, optionally .gz), folders, globs"
    ),
    out: Path = typer.Option(..., "--out", help="transcripts JSONL to write"),
    rejects: Path = typer.Option(
        None, "--rejects", help="rejects JSONL [default: OUT.rejects.jsonl]"
    ),
    fmt: FormatOpt = "auto",
    max_rejects: MaxRejectsOpt = None,
    mapping: MappingOpt = None,
    messages_field: MessagesFieldOpt = None,
    id_field: IdFieldOpt = None,
    task_key_field: TaskKeyFieldOpt = None,
    outcome_field: OutcomeFieldOpt = None,
    outcome_values: OutcomeValuesOpt = None,
    label_field: LabelFieldOpt = None,
    near_dup_merge: NearDupOpt = False,
    redact: bool = typer.Option(True, help="redact PII (on by default; turn off only for tests)"),
) -> None:
    """Read conversation logs in any supported shape into canonical transcripts."""
    options = build_options(
        fmt, mapping, messages_field, id_field, task_key_field, outcome_field, label_field,
        near_dup_merge, max_rejects, redact, outcome_values,
    )  # fmt: skip
    rejects = rejects or out.with_name(out.name + ".rejects.jsonl")
    with BarStages() as bars:
        summary = ingest_file(expand_inputs(inputs), out, rejects, options, bars)
    print_ingest(summary, out, rejects)
    if summary.ok == 0:
        raise ConfigError(
            "no transcript was ingested; check --format and the mapping flags "
            f"(first rejects are in {rejects})"
        )


ingest.__doc__ = (ingest.__doc__ or "") + EXAMPLES
