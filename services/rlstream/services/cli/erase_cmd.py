"""``rlstream erase``: remove one conversation's, one user's or one agent's data (GDPR/CCPA),
in one audited operation (:mod:`rlstream.erasure`); ``--dry-run`` only reports."""

from __future__ import annotations

import asyncio
import os
from contextlib import AsyncExitStack
from pathlib import Path
from typing import Annotated, Any

import orjson
import typer

from rlstream.erasure import Eraser, ErasureReport, ErasureSettings, Selector, resume
from rlstream.errors import ConfigError
from rlstream.launch.settings import LaunchSettings
from rlstream.pii import keys
from rlstream.services.cli.common import console, friendly_errors, out
from rlstream.services.cli.db import DataDirOpt, DsnOpt, _dsn
from rlstream.storage import ErasureOps, RedisState, Store, check_schema

ERASE_HELP = """Erase one conversation, one user or one agent from everything rlstream stores: Postgres rows (transcripts, rollouts, group counts, turn buffers, held-out keys, lineage; digests and counts stay as tombstones), Redis keys, rows of released datasets (a new revision, or the release revoked: RLSTREAM_ERASURE_DATASETS), copies of training rows in finished runs' folders, and tombstones on compacted topics. Writes an erasure record (what, when, counts; never the value) and lists the datasets, runs and models trained on the data; RLSTREAM_ERASURE_CHAMPION=keep|rollback decides whether such a champion stays.

A user is matched through the subject fields ingest stores as keyed stand-ins (RLSTREAM_SUBJECT_FIELDS): give the same RLSTREAM_PII_KEY as the services. Topics that are not compacted (every rlstream topic as shipped, the raw topic included) keep their records until retention.ms: the output says until when. See docs/erasure.md.

[bold]Examples[/]

rlstream erase --user-key C-20931 --dry-run

rlstream erase --user-value jane.doe@example.com

rlstream erase --conversation conv-8812

rlstream erase --user-key 4411 --field account_id

rlstream erase --resume erasure-20250101T120000-1a2b3c4d   (finish file work left pending)
"""


def _selector(
    conversation: str | None,
    user_key: str | None,
    user_value: str | None,
    agent: str | None,
    field: str | None,
) -> Selector | None:
    given = [
        (k, v)
        for k, v in (
            ("conversation", conversation),
            ("user_key", user_key),
            ("user_value", user_value),
            ("agent", agent),
        )
        if v is not None
    ]
    if len(given) > 1:
        raise ConfigError(
            "give one of --conversation, --user-key, --user-value, --agent (not several)"
        )
    if field is not None and (not given or given[0][0] != "user_key"):
        raise ConfigError("--field goes with --user-key")
    if not given:
        return None
    kind, value = given[0]
    if not value.strip():
        raise ConfigError(f"--{kind.replace('_', '-')} is empty")
    return Selector(kind=kind, value=value, field=field)


def _redis(url: str | None, namespace: str, settings: ErasureSettings) -> RedisState | None:
    url = url or (settings.redis_url.get_secret_value() if settings.redis_url else None)
    if not url:
        return None
    return RedisState.from_url(url, namespace=namespace, cafile=settings.redis_ssl_cafile)


async def _champion_hooks(stack: AsyncExitStack, store: Store) -> tuple[Any, Any]:
    """(rollback, previous_of) for RLSTREAM_ERASURE_CHAMPION=rollback: the registry's
    rollback with the deploy target and, with Kafka configured, the deployment event."""
    from rlstream.erasure.champions import registry_hooks
    from rlstream.registry import DeploySettings, KafkaSink, NullSink, Registry, make_target
    from rlstream.settings import load_settings

    sink: Any = NullSink()
    if os.environ.get("RLSTREAM_KAFKA_BOOTSTRAP"):
        prefix = os.environ.get("RLSTREAM_TOPIC_PREFIX", "")
        sink = await stack.enter_async_context(KafkaSink(load_settings(), topic_prefix=prefix))
    return registry_hooks(Registry(store, target=make_target(DeploySettings()), sink=sink))


async def _run(
    dsn: str,
    selector: Selector | None,
    resume_id: str | None,
    settings: ErasureSettings,
    roots: tuple[Path, Path],
    redis: RedisState | None,
    dry_run: bool,
) -> ErasureReport:
    await check_schema(dsn)  # an erasing command never runs against a schema it does not know
    async with AsyncExitStack() as stack:
        store = await Store.connect(dsn, max_size=2)
        stack.push_async_callback(store.close)
        if redis is not None:
            stack.push_async_callback(redis.close)
            await redis.check()
        topics = None
        if os.environ.get("RLSTREAM_KAFKA_BOOTSTRAP"):
            from rlstream.events.topic_table import TopicSettings

            topics = TopicSettings()
        rollback = previous_of = None
        if settings.erasure_champion == "rollback":
            rollback, previous_of = await _champion_hooks(stack, store)
        eraser = Eraser(
            ErasureOps(store.pool), settings, dataset_roots=[roots[0]], run_roots=[roots[1]],
            redis=redis, topics=topics, rollback=rollback, previous_of=previous_of,
        )  # fmt: skip
        if resume_id is not None:
            return await resume(eraser, resume_id)
        assert selector is not None
        return await eraser.run(selector, dry_run=dry_run)


@friendly_errors
def erase(
    conversation: Annotated[
        str | None, typer.Option("--conversation", help="a conversation id (as sent or stored)")
    ] = None,
    user_key: Annotated[
        str | None,
        typer.Option("--user-key", help="a subject field's value, e.g. a customer id"),
    ] = None,
    user_value: Annotated[
        str | None,
        typer.Option(
            "--user-value", help="a raw personal value (e-mail, phone): its keyed stand-in"
        ),
    ] = None,
    agent: Annotated[
        str | None, typer.Option("--agent", help="every conversation of this agent")
    ] = None,
    field: Annotated[
        str | None,
        typer.Option("--field", help="with --user-key: only this metadata field"),
    ] = None,
    resume_id: Annotated[
        str | None,
        typer.Option("--resume", help="finish an erasure's pending file work", metavar="ID"),
    ] = None,
    dry_run: Annotated[
        bool, typer.Option("--dry-run", help="report what would be erased; change nothing")
    ] = False,
    as_json: Annotated[bool, typer.Option("--json", help="the report as JSON")] = False,
    datasets_dir: Annotated[
        Path | None,
        typer.Option("--datasets-dir", help="the only folder releases are rewritten in"),
    ] = None,
    runs_dir: Annotated[
        Path | None,
        typer.Option("--runs-dir", help="the only folder run copies are removed from"),
    ] = None,
    redis_url: Annotated[
        str | None, typer.Option("--redis-url", help="default: RLSTREAM_REDIS_URL")
    ] = None,
    namespace: Annotated[
        str | None,
        typer.Option("--namespace", help="Redis key prefix (default: RLSTREAM_REDIS_NAMESPACE)"),
    ] = None,
    dsn: str | None = DsnOpt,
    data_dir: Path | None = DataDirOpt,
) -> None:
    selector = _selector(conversation, user_key, user_value, agent, field)
    if (selector is None) == (resume_id is None):
        raise ConfigError(
            "give what to erase: --conversation, --user-key, --user-value or --agent"
            " (or --resume ID)"
        )
    if resume_id is not None and dry_run:
        raise ConfigError("--resume does the pending work; it has no --dry-run")
    settings = ErasureSettings()
    launch = LaunchSettings()
    if data_dir is not None:
        settings = settings.model_copy(update={"data_dir": data_dir})
        launch = launch.model_copy(update={"data_dir": data_dir})
    if (
        selector is not None
        and selector.kind in ("user_key", "user_value")
        and keys.current() is None
    ):
        console.print(
            "warning: RLSTREAM_PII_KEY is not set: only unkeyed stand-ins (local, demo data)"
            " can match; give the services' key to find what they stored",
            markup=False, highlight=False, soft_wrap=True,
        )  # fmt: skip
    redis = _redis(redis_url, namespace or settings.redis_namespace, settings)
    roots = (datasets_dir or settings.datasets_path(), runs_dir or launch.runs_path())
    target = _dsn(dsn, data_dir, settings)
    report = asyncio.run(_run(target, selector, resume_id, settings, roots, redis, dry_run))
    if as_json:
        out.print_json(orjson.dumps(report.model_dump(mode="json")).decode())
    else:
        for line in report.lines():
            out.print(line, markup=False, highlight=False, soft_wrap=True)
    if report.status == "partial":
        raise typer.Exit(1)


erase.__doc__ = ERASE_HELP
