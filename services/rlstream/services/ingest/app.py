"""The ingest service: ``faststream run rlstream.services.ingest.app:app``.

Consumes ``rlstream.conversations.raw`` (whole conversations in any supported format, or
turn deltas), publishes canonical transcripts to ``rlstream.transcripts.v1`` keyed by
conversation id, dead-letters what it cannot accept to ``rlstream.conversations.raw.dlq``.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging

from faststream.kafka import KafkaMessage

from rlstream.assembly import Assembler, AssemblyOptions
from rlstream.assembly.pg import StoreTurnStore
from rlstream.delivery.runtime import (
    Runtime,
    documented_batch,
    kafka_app,
    raw_values,
    subscriber_kwargs,
)
from rlstream.events import DLQRecord, RawTurnDelta, topics
from rlstream.services.ingest.handler import IngestHandler
from rlstream.services.ingest.settings import IngestSettings
from rlstream.transcript import Transcript

SERVICE = "ingest"
settings = IngestSettings()
rt = Runtime(SERVICE, settings, (topics.TRANSCRIPTS, topics.dlq(topics.CONVERSATIONS_RAW)))
log = logging.getLogger("rlstream.services.ingest")

broker, app = kafka_app(
    SERVICE, settings, "Raw agent conversations (whole or turn deltas) -> canonical transcripts."
)
_state: dict[str, object] = {}

transcripts_out = broker.publisher(
    rt.topic(topics.TRANSCRIPTS),
    schema=Transcript,
    title="transcripts",
    description="Canonical, PII-redacted Transcript. Key: conversation id.",
)
dlq_out = broker.publisher(
    rt.topic(topics.dlq(topics.CONVERSATIONS_RAW)),
    schema=DLQRecord,
    title="raw-dlq",
    description="Rejected raw record with original bytes and the reason. Key: as received.",
)


@broker.subscriber(  # type: ignore[untyped-decorator]
    rt.topic(topics.CONVERSATIONS_RAW),
    decoder=raw_values,
    title="conversations-raw",
    description=(
        "Whole conversations in any supported format (canonical, OpenAI, Anthropic, "
        "ShareGPT …) or RawTurnDelta records. Key: conversation id."
    ),
    **subscriber_kwargs(settings, SERVICE),
)
async def on_raw(body: documented_batch(RawTurnDelta), msg: KafkaMessage) -> None:  # type: ignore[valid-type]
    handler: IngestHandler = _state["handler"]  # type: ignore[assignment]
    await rt.runner.run(msg, handler.handle)


async def _sweeper(handler: IngestHandler) -> None:
    while True:
        await asyncio.sleep(settings.assembly_sweep_interval_s)
        try:
            await handler.sweep()
        except Exception:
            log.warning("idle sweep failed; will retry", exc_info=True)


@app.on_startup
async def _start() -> None:
    from rlstream.ingest import IngestOptions, Ingestor

    await rt.start()
    assembler = Assembler(
        StoreTurnStore(rt.store),
        AssemblyOptions(
            idle_timeout_s=settings.assembly_idle_timeout_s,
            late_policy=settings.assembly_late_policy,
        ),
    )
    restored = await assembler.restore()
    opts = (
        IngestOptions(task_key_field=settings.task_key_field)
        if settings.task_key_field
        else IngestOptions()
    )
    handler = IngestHandler(rt, Ingestor(opts), assembler)
    _state["handler"] = handler
    _state["sweeper"] = asyncio.create_task(_sweeper(handler))
    log.info("ingest ready", extra={"restored_open_conversations": restored})


@app.after_startup
async def _ready() -> None:
    rt.health.set_ready(True)


@app.on_shutdown
async def _stop() -> None:
    task = _state.pop("sweeper", None)
    if isinstance(task, asyncio.Task):
        task.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await task


@app.after_shutdown
async def _closed() -> None:
    await rt.stop()
