"""``rlstream dlq``: list, show and replay dead letters (docs/replay.md)."""

from __future__ import annotations

import asyncio
import json

import typer

from rlstream.delivery import replay_io
from rlstream.delivery.replay import new_replay_id, not_replayable, replay_message
from rlstream.delivery.replay_select import Letter, LetterFilter, Tally, make_filter, select, tally
from rlstream.events import DLQRecord
from rlstream.services.cli.common import friendly_errors, out
from rlstream.settings import Settings, load_settings

app = typer.Typer(
    name="dlq",
    help="Dead letters: count them by reason, show them, replay them onto their source topic.",
    no_args_is_help=True,
    pretty_exceptions_enable=False,
)

TopicArg = typer.Argument(
    ..., help="the SOURCE topic whose dead letters to read (its DLQ is <topic>.dlq)"
)
BootstrapOpt = typer.Option(None, "--bootstrap", help="default: RLSTREAM_KAFKA_BOOTSTRAP")
CodeOpt = typer.Option([], "--code", help="only letters with this error_code (repeatable)")
ServiceOpt = typer.Option([], "--service", help="only letters from this service (repeatable)")
SinceOpt = typer.Option(
    None, "--since", help="only letters rejected at or after: ISO time, date, or age (2h, 7d)"
)
UntilOpt = typer.Option(None, "--until", help="only letters rejected before (same forms)")
AtOpt = typer.Option([], "--at", help="only the letter at PARTITION/OFFSET of the DLQ topic")


def _settings(bootstrap: str | None) -> Settings:
    """The environment's settings, with ``--bootstrap`` (if given) as the servers; the
    Kafka security variables apply either way."""
    settings = load_settings()
    return settings.model_copy(update={"kafka_bootstrap": bootstrap}) if bootstrap else settings


def _chosen(settings: Settings, topic: str, flt: LetterFilter) -> list[Letter]:
    return select(asyncio.run(replay_io.read_letters(settings, topic)), flt)


def _print_tally(t: Tally) -> None:
    for code, n in t.by_code.most_common():
        _say(f"{n:>8,}  {code}")
    for why, n in t.skipped.most_common():
        _say(f"not replayable {n:,}: {why}")
    _say(
        f"{t.total:,} dead letters, {t.replayable:,} replayable "
        f"({t.redacted:,} redacted: they replay as redacted)"
    )


def _say(text: str, markup: bool = True) -> None:
    """One line as given: not wrapped at the terminal width (topic names are long)."""
    out.print(text, soft_wrap=True, highlight=False, markup=markup)


@app.command("list")
@friendly_errors
def list_cmd(
    topic: str | None = typer.Argument(
        None, help="the SOURCE topic (its DLQ is <topic>.dlq); default: every *.dlq topic"
    ),
    code: list[str] = CodeOpt,
    service: list[str] = ServiceOpt,
    since: str | None = SinceOpt,
    until: str | None = UntilOpt,
    prefix: str = typer.Option(
        "", "--prefix", help="without TOPIC: only *.dlq topics whose name starts with this"
    ),
    bootstrap: str | None = BootstrapOpt,
) -> None:
    """Count the dead letters of TOPIC (or of every topic) by reason and say how many can
    be replayed.

    Example: rlstream dlq list rlstream.conversations.raw --since 1d
    """
    settings = _settings(bootstrap)
    flt = make_filter(code, service, since, until)
    sources = (
        [topic]
        if topic
        else [
            t.removesuffix(".dlq")
            for t in asyncio.run(replay_io.dlq_topics(settings))
            if t.startswith(prefix)
        ]
    )
    if not sources:
        _say("no *.dlq topics: nothing was dead-lettered")
    for source in sources:
        if not topic:
            _say(f"[bold]{source}.dlq[/bold]")
        _print_tally(tally(_chosen(settings, source, flt)))


@app.command("show")
@friendly_errors
def show_cmd(
    topic: str = TopicArg,
    code: list[str] = CodeOpt,
    service: list[str] = ServiceOpt,
    since: str | None = SinceOpt,
    until: str | None = UntilOpt,
    at: list[str] = AtOpt,
    limit: int = typer.Option(20, "--limit", min=0, help="show at most this many (0: all)"),
    as_json: bool = typer.Option(False, "--json", help="one JSON object per letter"),
    bootstrap: str | None = BootstrapOpt,
) -> None:
    """Show TOPIC's dead letters: where, when, which service, why, and a preview of the
    value (as stored: redacted where it held PII).

    Example: rlstream dlq show rlstream.transcripts.v1 --code no_reward_spec --limit 5
    """
    chosen = _chosen(_settings(bootstrap), topic, make_filter(code, service, since, until, at))
    shown = chosen if limit == 0 else chosen[:limit]
    for where, e in shown:
        if e is None:
            _say(f"{where}  not a dead letter (not a DLQRecord)")
        elif as_json:
            print(json.dumps({"at": where, **e.model_dump(mode="json")}))
        else:
            _show_one(where, e)
    if not as_json:
        _say(f"{len(shown):,} of {len(chosen):,} dead letters shown")


def _show_one(where: str, e: DLQRecord) -> None:
    flags = [
        f for f, on in (("redacted", e.value_redacted), ("truncated", e.value_truncated)) if on
    ]
    why = not_replayable(e)
    _say(
        f"[bold]{where}[/bold]  {e.failed_at:%Y-%m-%d %H:%M:%S}Z  {e.service}  "
        f"[red]{e.error_code}[/red]  {' '.join(flags)}",
    )
    key = e.original_key()
    _say(
        f"  source {e.topic}/{e.partition}/{e.offset}  key {key!r}  "
        f"{e.value_bytes if e.value_bytes is not None else '?'} bytes  "
        f"{'replayable' if why is None else 'not replayable: ' + why}",
        markup=False,
    )
    _say(f"  {e.error_class}: {e.error_message[:300]}", markup=False)
    preview = e.original_value()[:300].decode("utf-8", "replace")
    _say(f"  value: {preview}", markup=False)


@app.command("replay")
@friendly_errors
def replay_cmd(
    topic: str = TopicArg,
    code: list[str] = CodeOpt,
    service: list[str] = ServiceOpt,
    since: str | None = SinceOpt,
    until: str | None = UntilOpt,
    at: list[str] = AtOpt,
    dry_run: bool = typer.Option(False, "--dry-run", help="count what would be replayed"),
    replay_id: str | None = typer.Option(
        None, "--replay-id", help="the x-rlstream-replay value (default: replay-<time>-<hex>)"
    ),
    bootstrap: str | None = BootstrapOpt,
) -> None:
    """Publish TOPIC's dead letters back onto TOPIC with their key and headers, marked
    x-rlstream-replay (so the services' seen keys do not swallow what was never stored;
    what was stored stays stored once). A redacted letter replays as redacted; a truncated
    or unprocessable one cannot be replayed from the letter (use rlstream replay on the
    source topic). Fix what rejected them first: a letter replayed unchanged is rejected
    again.

    Example: rlstream dlq replay rlstream.transcripts.v1 --code no_reward_spec
    """
    settings = _settings(bootstrap)
    chosen = [
        (w, e)
        for w, e in _chosen(settings, topic, make_filter(code, service, since, until, at))
        if e is not None
    ]
    t = tally(chosen)
    for why, n in t.skipped.most_common():
        _say(f"skipped {n:,}: {why}")
    rid = replay_id or new_replay_id()
    todo = [replay_message(e, w, rid) for w, e in chosen if not_replayable(e) is None]
    redacted = f"{t.redacted:,} redacted, replayed as redacted"
    if dry_run:
        _say(
            f"would replay {len(todo):,} of {len(chosen):,} dead letters onto {topic} ({redacted})"
        )
        return
    asyncio.run(replay_io.publish(settings, todo))
    _say(
        f"replayed {len(todo):,} of {len(chosen):,} dead letters onto {topic} "
        f"(replay id {rid}; {redacted})"
    )
