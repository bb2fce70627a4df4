"""``rlstream services``: run a streaming service, or write the AsyncAPI documents.

Services are started through the ``faststream`` CLI by module path (never imported here:
one deployable does not import another), so ``rlstream services run grader`` is exactly
``faststream run rlstream.services.grader.app:app``.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Annotated

import typer

SERVICES = ("ingest", "grader", "curator", "evaluator")

app = typer.Typer(
    name="services", help="Run the Kafka services; generate AsyncAPI docs.", no_args_is_help=True
)


def _target(name: str) -> str:
    if name not in SERVICES:
        raise typer.BadParameter(f"unknown service {name!r}; choose from {', '.join(SERVICES)}")
    return f"rlstream.services.{name}.app:app"


def _faststream() -> list[str]:
    exe = shutil.which("faststream") or str(Path(sys.executable).with_name("faststream"))
    return [exe] if Path(exe).exists() else [sys.executable, "-m", "faststream"]


@app.command("run")
def run(
    name: Annotated[str, typer.Argument(help="ingest | grader | curator | evaluator")],
    workers: Annotated[int, typer.Option(help="worker processes (same consumer group)")] = 1,
) -> None:
    """Run one service in the foreground (settings from RLSTREAM_* environment)."""
    argv = [*_faststream(), "run", _target(name)]
    if workers > 1:
        argv += ["--workers", str(workers)]
    os.execvp(argv[0], argv)


@app.command("asyncapi")
def asyncapi(
    out: Annotated[Path, typer.Option(help="output folder")] = Path("docs/asyncapi"),
) -> None:
    """Write one AsyncAPI 3.0 YAML per service (generated from the apps themselves)."""
    out.mkdir(parents=True, exist_ok=True)
    for name in SERVICES:
        dest = out / f"{name}.yaml"
        subprocess.run(
            [*_faststream(), "docs", "gen", _target(name), "--yaml", "--out", str(dest)],
            check=True,
            env={
                **os.environ,
                "RLSTREAM_KAFKA_BOOTSTRAP": os.environ.get(
                    "RLSTREAM_KAFKA_BOOTSTRAP", "kafka:9092"
                ),
            },
        )
        typer.echo(f"wrote {dest}")
