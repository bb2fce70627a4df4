"""Submit one run through the coordinator on the system of record, outside a service.

``rlstream train --launcher kubernetes`` and the MCP ``train`` tool both launch this way:
the run row and its budget are written before the Job is created, as the curator does.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from rlstream.launch.base import LaunchRequest
from rlstream.launch.settings import LaunchSettings
from rlstream.training.config import TrainConfig


async def submit_with_store(
    settings: LaunchSettings,
    request: LaunchRequest,
    config: TrainConfig,
    backend: str,
    model: str | Path | None,
) -> tuple[Any, Any]:
    """(launch result or None when refused, the run row) on RLSTREAM_POSTGRES_DSN, else the
    embedded PostgreSQL."""
    from rlstream.launch.coordinator import LaunchCoordinator
    from rlstream.launch.registry import load_launcher
    from rlstream.storage import Store, upgrade
    from rlstream.storage.embedded import resolve_dsn
    from rlstream.training import run_id_for

    async def no_events(_: Any) -> None:  # the trainer and the watcher publish states
        return None

    dsn = resolve_dsn(settings)
    await upgrade(dsn)
    store = await Store.connect(dsn, max_size=2)
    coordinator = LaunchCoordinator(
        load_launcher("kubernetes", settings), store, no_events, settings
    )
    try:
        res = await coordinator.submit(
            request, config, backend=backend, base_model=None if model is None else str(model)
        )
        return res, await store.get_run(run_id_for(request.sha256))
    finally:
        await coordinator.close()
        await store.close()
