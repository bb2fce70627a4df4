"""The ingest flags (``rlstream ingest``, ``improve run``): typer options -> IngestOptions."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from rlstream.errors import ConfigError
from rlstream.formats import FORMATS, FieldMapping
from rlstream.ingest import IngestOptions
from rlstream.services.cli.common import console, require_files

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
