"""The curator service: ``faststream run rlstream.services.curator.app:app``.

Consumes ``rlstream.scored.v1`` into the pending pool; when an agent's pool passes the
release policy, seals a dataset, publishes ``DatasetReleased`` to ``rlstream.datasets.v1``
(key: dataset id) and hands it to the configured launcher (``RLSTREAM_LAUNCHER``: none,
local, kubernetes) after the budget check. The launcher's watcher (Job conditions, child
exit codes) runs in this process too and publishes ``TrainingRunEvent`` on
``rlstream.training.v1``. Retention (``RLSTREAM_RETENTION_*``, docs/retention.md) runs here
every ``RLSTREAM_RETENTION_INTERVAL_S``.
"""

from __future__ import annotations

import asyncio
import contextlib

from rlstream.delivery.service import StreamService, Topic
from rlstream.events import DatasetReleased, DLQRecord, ScoredEvent, TrainingRunEvent, topics
from rlstream.launch import launcher_from_settings
from rlstream.services.curator.handler import CuratorHandler
from rlstream.services.curator.retention import retention_loop
from rlstream.services.curator.settings import CuratorSettings
from rlstream.settings import startup_settings

SERVICE = "curator"
settings = startup_settings(CuratorSettings)
service = StreamService(
    SERVICE,
    settings,
    "Scored rollouts -> pending pool -> sealed dataset releases -> training launch.",
    source=Topic(topics.SCORED, ScoredEvent, "scored", "ScoredRollout. Key: task key."),
    outputs=(
        Topic(
            topics.DATASETS,
            DatasetReleased,
            "datasets",
            "DatasetReleased: manifest, hashes, profile, lineage summary. Key: dataset id.",
        ),
        Topic(
            topics.TRAINING,
            TrainingRunEvent,
            "training",
            "TrainingRunEvent: launched, started, succeeded, failed (with the reason) or "
            "over_budget. event_id = run_id:state (deduplicate on it). Key: run id.",
        ),
        Topic(
            topics.dlq(topics.SCORED),
            DLQRecord,
            "scored-dlq",
            "Scored record the curator could not accept, with the reason.",
        ),
    ),
    sized=(topics.DATASETS, topics.dlq(topics.SCORED)),
)
rt, broker, app = service.rt, service.broker, service.app
launcher = launcher_from_settings(settings)
handler = CuratorHandler(rt, settings, launcher)
service.handler = handler.handle
_tasks: list[asyncio.Task[None]] = []


@app.on_startup
async def _start() -> None:
    await rt.start()
    await handler.mark_all_pending_dirty()
    _tasks.append(asyncio.create_task(handler.run_forever()))
    _tasks.append(asyncio.create_task(handler.training.follow_runs()))
    _tasks.append(asyncio.create_task(retention_loop(rt, settings)))


@app.on_shutdown
async def _stop() -> None:
    for t in _tasks:
        t.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await t
    await launcher.close()
