"""``rlstream dlq``: look at dead letters and replay them onto their source topic."""

from __future__ import annotations

import asyncio
from collections import Counter
from typing import Any

import typer

from rlstream.delivery.kafka_connect import start_or_explain
from rlstream.delivery.kafka_security import client_kwargs
from rlstream.delivery.replay import not_replayable, replay_message
from rlstream.errors import ConfigError
from rlstream.events import DLQRecord
from rlstream.events.topics import dlq
from rlstream.services.cli.common import friendly_errors, out
from rlstream.settings import Settings, load_settings

app = typer.Typer(
    name="dlq",
    help="Dead letters: count them by reason, replay them onto their source topic.",
    no_args_is_help=True,
    pretty_exceptions_enable=False,
)

TopicArg = typer.Argument(
    ..., help="the SOURCE topic whose dead letters to read (its DLQ is <topic>.dlq)"
)
BootstrapOpt = typer.Option(None, "--bootstrap", help="default: RLSTREAM_KAFKA_BOOTSTRAP")


def _settings(bootstrap: str | None) -> Settings:
    """The environment's settings, with ``--bootstrap`` (if given) as the servers; the
    Kafka security variables apply either way."""
    settings = load_settings()
    return settings.model_copy(update={"kafka_bootstrap": bootstrap}) if bootstrap else settings


async def _letters(settings: Settings, topic: str) -> list[tuple[str, DLQRecord | None]]:
    """Every letter on ``<topic>.dlq`` now, with its coordinates (None: not a DLQRecord)."""
    from aiokafka import AIOKafkaConsumer, TopicPartition

    name, bootstrap = dlq(topic), settings.kafka_bootstrap
    # earliest, not the default latest: assign() may start a reset to the default that
    # lands after seek_to_beginning and leaves every position at the end (seen under load:
    # "replayed 0 of 0" right after a list of 2)
    cons = AIOKafkaConsumer(
        bootstrap_servers=bootstrap,
        enable_auto_commit=False,
        auto_offset_reset="earliest",
        **client_kwargs(settings),
    )
    await start_or_explain(cons, settings)
    try:
        parts = cons.partitions_for_topic(name)
        if not parts:
            await cons._client.force_metadata_update()
            parts = cons.partitions_for_topic(name) or set()
        if not parts:
            raise ConfigError(f"no topic {name} on {bootstrap}: nothing was dead-lettered")
        tps = [TopicPartition(name, p) for p in sorted(parts)]
        cons.assign(tps)
        end = await cons.end_offsets(tps)
        await cons.seek_to_beginning(*tps)
        out_: list[tuple[str, DLQRecord | None]] = []
        while any([await cons.position(tp) < end[tp] for tp in tps]):
            for recs in (await cons.getmany(timeout_ms=500)).values():
                for r in recs:
                    where = f"{r.topic}/{r.partition}/{r.offset}"
                    try:
                        out_.append((where, DLQRecord.model_validate_json(r.value or b"")))
                    except ValueError:
                        out_.append((where, None))
        return out_
    finally:
        await cons.stop()


async def _publish(settings: Settings, messages: list[Any]) -> None:
    from aiokafka import AIOKafkaProducer

    prod = AIOKafkaProducer(
        bootstrap_servers=settings.kafka_bootstrap,
        acks="all",
        enable_idempotence=True,
        **client_kwargs(settings),
    )
    await start_or_explain(prod, settings)
    try:
        futs = [await prod.send(t, value=v, key=k, headers=h) for t, k, v, h in messages]
        await asyncio.gather(*futs)
    finally:
        await prod.stop()


@app.command("list")
@friendly_errors
def list_cmd(topic: str = TopicArg, bootstrap: str | None = BootstrapOpt) -> None:
    """Count the dead letters of TOPIC by reason and say how many can be replayed.

    Example: rlstream dlq list rlstream.conversations.raw
    """
    letters = asyncio.run(_letters(_settings(bootstrap), topic))
    codes = Counter(e.error_code if e else "not_a_dead_letter" for _, e in letters)
    can = sum(e is not None and not_replayable(e) is None for _, e in letters)
    for code, n in codes.most_common():
        out.print(f"{n:>8,}  {code}")
    out.print(f"{len(letters):,} dead letters, {can:,} replayable byte for byte")


@app.command("replay")
@friendly_errors
def replay_cmd(
    topic: str = TopicArg,
    code: list[str] = typer.Option(
        [], "--code", help="only letters with this error_code (repeatable)"
    ),
    dry_run: bool = typer.Option(False, "--dry-run", help="say what would be replayed"),
    bootstrap: str | None = BootstrapOpt,
) -> None:
    """Publish TOPIC's dead letters back onto TOPIC, byte for byte, tagged
    x-rlstream-replayed-from. Letters whose value was redacted or truncated cannot be
    replayed from the letter and are listed with the reason. Fix what rejected them first
    (a reward config, a mapping): a letter replayed unchanged is rejected again.

    Example: rlstream dlq replay rlstream.transcripts.v1 --code no_reward_spec
    """
    servers = _settings(bootstrap)
    letters = asyncio.run(_letters(servers, topic))
    chosen = [(w, e) for w, e in letters if e is not None and (not code or e.error_code in code)]
    todo: list[Any] = []
    skipped: Counter[str] = Counter()
    for where, entry in chosen:
        why = not_replayable(entry)
        if why is None:
            todo.append(replay_message(entry, where))
        else:
            skipped[why] += 1
    for why, n in skipped.most_common():
        out.print(f"skipped {n:,}: {why}")
    if dry_run:
        out.print(f"would replay {len(todo):,} of {len(chosen):,} dead letters onto {topic}")
        return
    asyncio.run(_publish(servers, todo))
    out.print(f"replayed {len(todo):,} of {len(chosen):,} dead letters onto {topic}")
