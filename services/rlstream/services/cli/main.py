"""The ``rlstream`` command line: every stage of the loop over files, plus the services."""

from __future__ import annotations

import os
import sys

# Torch's OpenMP threads spin while they wait: on a shared or busy CPU that made batched
# generation ~7x slower than one thread (measured); passive waiting keeps both cores useful.
# Must be set before torch is imported, which every heavy command does lazily.
os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")

import typer

from rlstream.services.cli import (
    common,
    db,
    dlq_cmd,
    export_cmd,
    retention_cmd,
    services_cmd,
    topics_cmd,
)
from rlstream.services.cli.chat_cmd import chat
from rlstream.services.cli.curate_cmd import curate_command
from rlstream.services.cli.demo_cmd import demo
from rlstream.services.cli.erase_cmd import erase
from rlstream.services.cli.eval_cmd import eval_command
from rlstream.services.cli.grade_cmd import grade
from rlstream.services.cli.improve_cmd import improve_app
from rlstream.services.cli.ingest_cmd import ingest
from rlstream.services.cli.mcp_cmd import mcp
from rlstream.services.cli.profile_cmd import profile
from rlstream.services.cli.registry_cmd import lineage, promote
from rlstream.services.cli.replay_cmd import replay
from rlstream.services.cli.report_cmd import report
from rlstream.services.cli.sample_cmd import sample
from rlstream.services.cli.serve_cmd import serve
from rlstream.services.cli.status_cmd import status
from rlstream.services.cli.train_cmd import train
from rlstream.services.cli.up_cmd import up

app = typer.Typer(
    name="rlstream",
    help=(
        "Turn agents' production conversations into RL training data.\n\n"
        "The loop, one command per stage (each reads the previous stage's file):\n\n"
        "  rlstream ingest logs/*.jsonl --out transcripts.jsonl\n\n"
        "  rlstream grade --in transcripts.jsonl --out scored.jsonl --reward customer_support\n\n"
        "  rlstream profile --in scored.jsonl\n\n"
        "  rlstream curate --in scored.jsonl --out dataset/\n\n"
        "or all at once:  rlstream improve run --input logs/*.jsonl --reward gsm8k --output out/\n\n"
        "then:  rlstream train …,  rlstream eval --candidate-adapter … --heldout dataset/heldout.jsonl\n\n"
        "New here?  rlstream demo   (sample logs in every format, then the whole pipeline)"
    ),
    no_args_is_help=True,
    pretty_exceptions_enable=False,
    rich_markup_mode="rich",
    context_settings={"help_option_names": ["-h", "--help"]},
)


@app.callback()
def _global(
    debug: bool = typer.Option(
        False, "--debug", help="show the full traceback of an error (also RLSTREAM_DEBUG=1)"
    ),
) -> None:
    if debug:
        common.DEBUG = True
    if {"RLSTREAM_PII_KEY", "RLSTREAM_PII_KEY_FILE", "RLSTREAM_PII_NER_MODEL"} & os.environ.keys():
        # stand-ins keyed as the services' are, names also by a local NER model when one is
        # named (docs/pii.md); without either the CLI keeps the unkeyed local form and the
        # built-in detectors, and settings are not read for commands that need none
        from rlstream.pii import ner
        from rlstream.pii.keys import configure_from_settings
        from rlstream.settings import load_settings

        settings = load_settings()
        configure_from_settings(settings)
        ner.configure_from_settings(settings)


app.command("ingest")(ingest)
app.command("grade")(grade)
app.command("profile")(profile)
app.command("curate")(curate_command)
app.add_typer(export_cmd.app, name="export")
app.add_typer(improve_app, name="improve")
app.command("sample")(sample)
app.command("demo")(demo)
app.command("train")(train)
app.command("eval")(eval_command)
app.command("promote")(promote)
app.command("lineage")(lineage)
app.command("report")(report)
app.command("erase")(erase)
app.command("chat")(chat)
app.command("mcp")(mcp)
app.command("serve")(serve)
app.command("status")(status)
app.add_typer(db.app, name="db")
app.add_typer(dlq_cmd.app, name="dlq")
app.command("replay")(replay)
app.add_typer(retention_cmd.app, name="retention")
app.add_typer(services_cmd.app, name="services")
app.add_typer(topics_cmd.app, name="topics")
app.command("up")(up)


def run() -> None:
    """Console-script entry point: an error that escapes a command is still one line."""
    try:
        app()
    except Exception as exc:  # commands not wrapped in friendly_errors
        if common.DEBUG:
            raise
        code, line = common.error_line(exc)
        common.console.print(line, markup=False, highlight=False, soft_wrap=True)
        sys.exit(code)


if __name__ == "__main__":
    run()
