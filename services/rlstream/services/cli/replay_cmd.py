"""``rlstream replay``: re-publish a range of a topic, marked, for backfills (docs/replay.md)."""

from __future__ import annotations

import asyncio

import typer

from rlstream.delivery import replay_io
from rlstream.delivery.replay import new_replay_id
from rlstream.delivery.replay_select import parse_time
from rlstream.errors import ConfigError
from rlstream.services.cli.common import friendly_errors, out, progress
from rlstream.settings import load_settings


def _say(text: str, markup: bool = True) -> None:
    """One line as given: not wrapped at the terminal width (topic names are long)."""
    out.print(text, soft_wrap=True, highlight=False, markup=markup)


@friendly_errors
def replay(
    topic: str = typer.Option(..., "--topic", help="the topic to re-read (full name)"),
    from_offset: int | None = typer.Option(
        None, "--from-offset", min=0, help="re-read from this offset of each partition"
    ),
    since: str | None = typer.Option(
        None, "--since", help="re-read records stamped at or after: ISO time, date, or age (7d)"
    ),
    partition: list[int] = typer.Option(
        [], "--partition", help="only this partition (repeatable; default: all)"
    ),
    to_topic: str | None = typer.Option(
        None, "--to-topic", help="publish onto this topic instead (default: back onto --topic)"
    ),
    dry_run: bool = typer.Option(False, "--dry-run", help="count what would be replayed"),
    replay_id: str | None = typer.Option(
        None, "--replay-id", help="the x-rlstream-replay value (default: replay-<time>-<hex>)"
    ),
    bootstrap: str | None = typer.Option(
        None, "--bootstrap", help="default: RLSTREAM_KAFKA_BOOTSTRAP"
    ),
) -> None:
    """Re-publish TOPIC's records from an offset or a time up to its end now, with their
    keys and headers, marked x-rlstream-replay: for a backfill the services' seen keys
    would otherwise swallow for 7 days. What was stored stays stored once (a replay of it
    is a no-op, however often it runs); what was seen but never stored goes through.
    The alternative, resetting a consumer group's offsets, is in docs/replay.md.

    Example: rlstream replay --topic rlstream.conversations.raw --since 2025-03-01
    """
    if (from_offset is None) == (since is None):
        raise ConfigError("give exactly one of --from-offset N or --since TIME")
    settings = load_settings()
    if bootstrap:
        settings = settings.model_copy(update={"kafka_bootstrap": bootstrap})
    since_ms = None if since is None else int(parse_time(since).timestamp() * 1000)
    rng = replay_io.Range(topic, tuple(sorted(set(partition))), from_offset, since_ms)
    plan = asyncio.run(replay_io.plan_range(settings, rng))
    total = sum(end - start for start, end in plan.values())
    for p, (start, end) in sorted(plan.items()):
        _say(f"partition {p}: offsets {start:,} to {end:,} ({end - start:,} records)")
    dest = to_topic or topic
    if dry_run:
        _say(f"would replay {total:,} records of {topic} onto {dest}")
        return
    rid = replay_id or new_replay_id()
    with progress(f"replaying {topic}", total) as advance:
        sent = asyncio.run(replay_io.copy_range(settings, topic, plan, rid, to_topic, advance))
    _say(f"replayed {sent:,} records of {topic} onto {dest} (replay id {rid})")
