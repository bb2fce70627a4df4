"""The curator service: ``faststream run rlstream.services.curator.app:app``.

Consumes ``rlstream.scored.v1`` into the pending pool; when an agent's pool passes the
release policy, seals a dataset, publishes ``DatasetReleased`` to ``rlstream.datasets.v1``
(key: dataset id) and hands it to the configured launcher (``RLSTREAM_LAUNCHER``: none,
local, kubernetes) after the budget check. The launcher's watcher (Job conditions, child
exit codes) runs in this process too and publishes ``TrainingRunEvent`` on
``rlstream.training.v1``.
"""

from __future__ import annotations

import asyncio
import contextlib

from faststream.kafka import KafkaMessage

from rlstream.delivery.runtime import (
    Runtime,
    documented_batch,
    kafka_app,
    raw_values,
    subscriber_kwargs,
)
from rlstream.events import DatasetReleased, DLQRecord, ScoredEvent, TrainingRunEvent, topics
from rlstream.launch import launcher_from_settings
from rlstream.services.curator.handler import CuratorHandler
from rlstream.services.curator.settings import CuratorSettings

SERVICE = "curator"
settings = CuratorSettings()
rt = Runtime(SERVICE, settings, (topics.DATASETS, topics.dlq(topics.SCORED)))
broker, app = kafka_app(
    SERVICE,
    settings,
    "Scored rollouts -> pending pool -> sealed dataset releases -> training launch.",
)
launcher = launcher_from_settings(settings)
handler = CuratorHandler(rt, settings, launcher)
_tasks: list[asyncio.Task[None]] = []

datasets_out = broker.publisher(
    rt.topic(topics.DATASETS),
    schema=DatasetReleased,
    title="datasets",
    description="DatasetReleased: manifest, hashes, profile, lineage summary. Key: dataset id.",
)
training_out = broker.publisher(
    rt.topic(topics.TRAINING),
    schema=TrainingRunEvent,
    title="training",
    description="TrainingRunEvent: launched, started, succeeded, failed (with the reason) or "
    "over_budget. event_id = run_id:state (deduplicate on it). Key: run id.",
)
dlq_out = broker.publisher(
    rt.topic(topics.dlq(topics.SCORED)),
    schema=DLQRecord,
    title="scored-dlq",
    description="Scored record the curator could not accept, with the reason.",
)


@broker.subscriber(  # type: ignore[untyped-decorator]
    rt.topic(topics.SCORED),
    decoder=raw_values,
    title="scored",
    description="ScoredRollout. Key: task key.",
    **subscriber_kwargs(settings, SERVICE),
)
async def on_scored(body: documented_batch(ScoredEvent), msg: KafkaMessage) -> None:  # type: ignore[valid-type]
    await rt.runner.run(msg, handler.handle)


@app.on_startup
async def _start() -> None:
    await rt.start()
    await handler.mark_all_pending_dirty()
    _tasks.append(asyncio.create_task(handler.run_forever()))
    _tasks.append(asyncio.create_task(handler.training.follow_runs()))


@app.after_startup
async def _ready() -> None:
    rt.health.set_ready(True)


@app.on_shutdown
async def _stop() -> None:
    for t in _tasks:
        t.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await t
    await launcher.close()


@app.after_shutdown
async def _closed() -> None:
    await rt.stop()
