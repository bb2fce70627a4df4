"""``rlstream ingest``: any supported log shape -> redacted, task-keyed transcripts."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from rlstream.errors import ConfigError
from rlstream.formats import FORMATS, FieldMapping
from rlstream.ingest import IngestOptions, IngestSummary, Reject, ingest_paths
from rlstream.jsonl import write_models
from rlstream.services.cli.common import (
    console,
    expand_inputs,
    friendly_errors,
    progress,
    require_files,
)

EXAMPLES = """

[bold]Examples[/]

rlstream ingest logs/*.jsonl --out transcripts.jsonl

rlstream ingest export.json.gz --format anthropic --out t.jsonl --rejects bad.jsonl

rlstream ingest raw.jsonl --out t.jsonl --messages-field traj --id-field meta.conv_id --task-key-field task_id --outcome-field reward --label-field answer

rlstream ingest raw.jsonl --out t.jsonl --mapping mapping.yaml

Formats: openai (chat, legacy functions, Responses API), anthropic, sharegpt, langchain (LangSmith runs), otel (GenAI / OpenInference spans), gemini, canonical; --format auto detects per record. JSON arrays, JSONL and gzip are read as a stream. PII (emails, phones, cards, IBANs, SSNs, IPs, keys, tokens) is redacted before writing.
"""


def build_options(
    fmt: str = "auto",
    mapping_file: Path | None = None,
    messages_field: str | None = None,
    id_field: str | None = None,
    task_key_field: str | None = None,
    outcome_field: str | None = None,
    label_field: str | None = None,
    near_dup_merge: bool = False,
    max_rejects: int | None = None,
    redact: bool = True,
    outcome_values: str | None = None,
) -> IngestOptions:
    """IngestOptions from CLI flags; flags override a mapping file's fields."""
    mapping: FieldMapping | None = None
    if mapping_file is not None:
        require_files([mapping_file])
        mapping = FieldMapping.from_yaml(mapping_file)
    flags = {
        "messages_field": messages_field,
        "id_field": id_field,
        "outcome_field": outcome_field,
        "label_field": label_field,
    }
    given: dict[str, object] = {k: v for k, v in flags.items() if v is not None}
    if outcome_values:
        given["outcome_values"] = parse_value_map(outcome_values)
    if given:
        mapping = (mapping or FieldMapping()).model_copy(update=given)
        mapping = FieldMapping.model_validate(mapping.model_dump())
    if not redact:
        console.print("[yellow]warning:[/] --no-redact: PII will be written as-is")
    return IngestOptions(
        format=fmt,
        mapping=mapping,
        task_key_field=task_key_field,
        near_dup_merge=near_dup_merge,
        max_rejects=max_rejects,
        redact=redact,
    )


def parse_value_map(text: str) -> dict[str, float]:
    """``resolved=1,escalated=0`` -> {"resolved": 1.0, "escalated": 0.0}."""
    out: dict[str, float] = {}
    for part in filter(None, (p.strip() for p in text.split(","))):
        name, sep, num = part.rpartition("=")
        try:
            score = float(num)
        except ValueError:
            score = -1.0
        if not sep or not name.strip() or not 0.0 <= score <= 1.0:
            raise ConfigError(
                f"--outcome-values: expected NAME=SCORE pairs with scores in [0, 1], got {part!r}"
            )
        out[name.strip()] = score
    return out


def run_ingest(
    inputs: list[Path], out: Path, rejects: Path, options: IngestOptions
) -> IngestSummary:
    """Stream inputs to ``out`` (transcripts) and ``rejects``; returns the summary."""
    require_files(inputs)
    out.parent.mkdir(parents=True, exist_ok=True)
    bad: list[Reject] = []
    run = ingest_paths(inputs, options)
    total = run.summary.bytes_total or None
    with progress("ingesting (bytes)", total) as advance, out.open("w") as fh:
        last = 0
        for item in run:
            if isinstance(item, Reject):
                bad.append(item)
            else:
                fh.write(item.model_dump_json())
                fh.write("\n")
            now = run.summary.bytes_read
            if now > last:
                advance(now - last)
                last = now
    write_models(rejects, bad)
    if run.summary.read == 0 and not bad:
        names = ", ".join(str(p) for p in inputs)
        raise ConfigError(f"the input is empty: no records in {names}")
    return run.summary


def print_summary(s: IngestSummary, out: Path, rejects: Path) -> None:
    console.print(
        f"read [bold]{s.read:,}[/] records from {s.files} file(s): {s.ok:,} transcripts → {out}, "
        f"{s.rejected:,} rejected → {rejects}, {s.duplicates:,} duplicate ids dropped"
    )
    if s.by_format:
        console.print(
            "  formats: " + ", ".join(f"{k} {v:,}" for k, v in sorted(s.by_format.items()))
        )
    if s.task_key_groups:
        console.print(
            "  task-key groups by rule: "
            + ", ".join(f"{k} {v:,}" for k, v in sorted(s.task_key_groups.items()))
        )
    if s.rejects_by_code:
        console.print(
            "  rejects: " + ", ".join(f"{k} {v:,}" for k, v in sorted(s.rejects_by_code.items()))
        )
    if s.pii_found:
        console.print(
            "  PII redacted: " + ", ".join(f"{k} {v:,}" for k, v in sorted(s.pii_found.items()))
        )


FormatOpt = Annotated[str, typer.Option("--format", help="auto | " + " | ".join(FORMATS))]
MappingOpt = Annotated[
    Path | None, typer.Option("--mapping", help="YAML field mapping for custom shapes")
]
MessagesFieldOpt = Annotated[str | None, typer.Option(help="dotted path to the message list")]
IdFieldOpt = Annotated[str | None, typer.Option(help="dotted path to the conversation id")]
TaskKeyFieldOpt = Annotated[
    str | None, typer.Option(help="dotted path to the task / intent / scenario id")
]
OutcomeFieldOpt = Annotated[
    str | None,
    typer.Option(help="dotted path to the logged outcome, any name (bool, number or string)"),
]
OutcomeValuesOpt = Annotated[
    str | None,
    typer.Option(help="scores for string outcomes, e.g. resolved=1,escalated=0"),
]
LabelFieldOpt = Annotated[str | None, typer.Option(help="dotted path to the gold label / answer")]
NearDupOpt = Annotated[
    bool, typer.Option("--near-dup-merge", help="merge near-identical openers into one task")
]
MaxRejectsOpt = Annotated[
    int | None, typer.Option("--max-rejects", help="fail when more records are rejected")
]


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
    summary = run_ingest(expand_inputs(inputs), out, rejects, options)
    print_summary(summary, out, rejects)
    if summary.ok == 0:
        raise ConfigError(
            "no transcript was ingested; check --format and the mapping flags "
            f"(first rejects are in {rejects})"
        )


ingest.__doc__ = (ingest.__doc__ or "") + EXAMPLES
