"""The ingest service: ``faststream run rlstream.services.ingest.app:app``.

Consumes ``rlstream.conversations.raw`` (whole conversations in any supported format, or
turn deltas), publishes canonical transcripts to ``rlstream.transcripts.v1`` keyed by
conversation id, dead-letters what it cannot accept to ``rlstream.conversations.raw.dlq``.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
from datetime import timedelta

from rlstream.assembly import Assembler, AssemblyOptions
from rlstream.assembly.pg import StoreTurnStore
from rlstream.delivery.service import StreamService, Topic
from rlstream.events import DLQRecord, RawTurnDelta, topics
from rlstream.services.ingest.handler import IngestHandler
from rlstream.services.ingest.settings import IngestSettings
from rlstream.settings import startup_settings
from rlstream.transcript import Transcript

SERVICE = "ingest"
settings = startup_settings(IngestSettings)
log = logging.getLogger("rlstream.services.ingest")
service = StreamService(
    SERVICE,
    settings,
    "Raw agent conversations (whole or turn deltas) -> canonical transcripts.",
    source=Topic(
        topics.CONVERSATIONS_RAW,
        RawTurnDelta,
        "conversations-raw",
        "Whole conversations in any supported format (canonical, OpenAI, Anthropic, "
        "ShareGPT …) or RawTurnDelta records. Key: conversation id.",
    ),
    outputs=(
        Topic(
            topics.TRANSCRIPTS,
            Transcript,
            "transcripts",
            "Canonical, PII-redacted Transcript. Key: conversation id.",
        ),
        Topic(
            topics.dlq(topics.CONVERSATIONS_RAW),
            DLQRecord,
            "raw-dlq",
            "Rejected raw record with original bytes and the reason. Key: as received.",
        ),
    ),
    sized=(topics.TRANSCRIPTS, topics.dlq(topics.CONVERSATIONS_RAW)),
)
rt, broker, app = service.rt, service.broker, service.app
_state: dict[str, object] = {}


async def _sweeper(handler: IngestHandler) -> None:
    last_purge = time.monotonic()
    while True:
        await asyncio.sleep(settings.assembly_sweep_interval_s)
        try:
            await handler.sweep()
        except Exception:
            log.warning("idle sweep failed; will retry", exc_info=True)
        if time.monotonic() - last_purge >= settings.assembly_purge_interval_s:
            last_purge = time.monotonic()
            await _purge_closed()


async def _purge_closed() -> None:
    """Retention for turn buffers: without it the table grows by every delta ever sent."""
    keep = settings.assembly_closed_retention_s
    if keep <= 0:
        return
    try:
        n = await rt.store.purge_closed_buffers(timedelta(seconds=keep))
    except Exception:
        log.warning("closed turn-buffer purge failed; will retry", exc_info=True)
        return
    if n:
        log.info("closed turn buffers purged", extra={"rows": n, "older_than_s": keep})


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
    opts = IngestOptions(
        task_key_field=settings.task_key_field or None, subject_fields=settings.subject_fields
    )
    handler = IngestHandler(rt, Ingestor(opts), assembler)
    service.handler = handler.handle
    _state["sweeper"] = asyncio.create_task(_sweeper(handler))
    log.info("ingest ready", extra={"restored_open_conversations": restored})


@app.on_shutdown
async def _stop() -> None:
    task = _state.pop("sweeper", None)
    if isinstance(task, asyncio.Task):
        task.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await task
