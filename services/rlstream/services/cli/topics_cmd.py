"""``rlstream topics``: create and configure every topic from the library's topic table."""

from __future__ import annotations

import asyncio
import logging
from pathlib import Path
from typing import Any

import typer

from rlstream.delivery.topics import Plan, apply_cluster, plan_cluster
from rlstream.errors import ConfigError
from rlstream.events.topic_table import TopicSettings, TopicSpec, render_json, table_for
from rlstream.services.cli.common import friendly_errors, out

app = typer.Typer(
    name="topics",
    help="Topics as code: show the diff against the cluster (plan), make it so (apply).",
    no_args_is_help=True,
    pretty_exceptions_enable=False,
)

BootstrapOpt = typer.Option(None, "--bootstrap", help="default: RLSTREAM_KAFKA_BOOTSTRAP")
OverridesOpt = typer.Option(
    None, "--overrides", help="JSON/YAML overrides (default: RLSTREAM_TOPICS_OVERRIDES_FILE)"
)
RfOpt = typer.Option(
    None,
    "--replication-factor",
    min=1,
    help="every topic's RF (default: RLSTREAM_TOPICS_REPLICATION_FACTOR, else the table's 3)",
)
PrefixOpt = typer.Option(
    None, "--prefix", help="topic name prefix (default: RLSTREAM_TOPIC_PREFIX)"
)


def _setup(
    bootstrap: str | None, overrides: Path | None, rf: int | None, prefix: str | None
) -> tuple[TopicSettings, list[TopicSpec]]:
    """(the settings, with the options over the environment; this deployment's table)."""
    logging.getLogger("aiokafka").setLevel(logging.CRITICAL)  # the error is our one line
    changes: dict[str, Any] = {}
    if bootstrap is not None:
        changes["kafka_bootstrap"] = bootstrap
    if overrides is not None:
        changes["topics_overrides_file"] = overrides
    if rf is not None:
        changes["topics_replication_factor"] = rf
    if prefix is not None:
        changes["topic_prefix"] = prefix
    settings = TopicSettings().model_copy(update=changes)
    return settings, table_for(settings)


def _show(plan: Plan, servers: str) -> None:
    for line in plan.lines():
        out.print(line, markup=False, highlight=False, soft_wrap=True)
    if plan.empty and not plan.refused:
        out.print(f"in sync: every topic on {servers} matches the table")


@app.command("plan")
@friendly_errors
def plan_cmd(
    bootstrap: str | None = BootstrapOpt,
    overrides: Path | None = OverridesOpt,
    replication_factor: int | None = RfOpt,
    prefix: str | None = PrefixOpt,
) -> None:
    """Show what apply would change: topics to create, configs to alter (old -> new),
    partitions to add, and what Kafka cannot change in place (REFUSED). Changes nothing.

    Example: rlstream topics plan --bootstrap kafka:9092
    """
    settings, table = _setup(bootstrap, overrides, replication_factor, prefix)
    _show(asyncio.run(plan_cluster(settings, table)), settings.kafka_bootstrap)


@app.command("apply")
@friendly_errors
def apply_cmd(
    bootstrap: str | None = BootstrapOpt,
    overrides: Path | None = OverridesOpt,
    replication_factor: int | None = RfOpt,
    prefix: str | None = PrefixOpt,
) -> None:
    """Create missing topics, alter changed configs, add partitions. Idempotent: a second
    apply changes nothing. Exits non-zero when a change Kafka cannot make is needed.

    Example: rlstream topics apply --replication-factor 1   (a one-broker dev cluster)
    """
    settings, table = _setup(bootstrap, overrides, replication_factor, prefix)
    plan = asyncio.run(apply_cluster(settings, table))
    _show(plan, settings.kafka_bootstrap)
    if plan.refused:
        raise ConfigError(
            f"{len(plan.refused)} change(s) cannot be applied (REFUSED above); the rest was"
        )


@app.command("render")
@friendly_errors
def render_cmd(
    fmt: str = typer.Option("json", "--format", help="json (the chart's files/topics.json)"),
    out_path: Path | None = typer.Option(None, "--out", help="write here (default: stdout)"),
) -> None:
    """Print the default topic table as the chart reads it.

    Example: rlstream topics render --out charts/rlstream/files/topics.json
    """
    if fmt != "json":
        raise ConfigError(f"--format {fmt}: only json is supported")
    text = render_json()
    if out_path is None:
        out.print(text, end="", markup=False, highlight=False, soft_wrap=True)
    else:
        out_path.write_text(text)
