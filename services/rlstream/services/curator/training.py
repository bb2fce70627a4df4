"""The curator's training side: launch each release, retry failed launches, follow runs.

Runs in the curator process beside the release loop (see docs/kubernetes-training.md):
the curator already holds the launcher's ServiceAccount, the Postgres pool and the
producer. The runs table is the durable record of what was launched.
"""

from __future__ import annotations

import asyncio
import logging
import time

from rlstream.delivery.runtime import Runtime
from rlstream.events import DatasetReleased, TrainingRunEvent, topics
from rlstream.launch import LaunchCoordinator, Launcher, LaunchRequest
from rlstream.services.curator.settings import CuratorSettings

log = logging.getLogger("rlstream.services.curator")


class CuratorTraining:
    def __init__(self, rt: Runtime, settings: CuratorSettings, launcher: Launcher | None) -> None:
        self.rt = rt
        self.settings = settings
        self.launcher = launcher
        self._coordinator: LaunchCoordinator | None = None
        self._last_launch_sweep = 0.0

    def coordinator(self) -> LaunchCoordinator | None:
        """Budget check + launch + run tracking around the configured launcher."""
        if self.launcher is None or self.launcher.name == "none":
            return None
        if self._coordinator is None:
            self._coordinator = LaunchCoordinator(
                self.launcher, self.rt.store, self.publish_training, self.settings
            )
        return self._coordinator

    async def launch(self, event: DatasetReleased) -> None:
        coordinator = self.coordinator()
        if coordinator is None:
            return
        try:
            await coordinator.submit(LaunchRequest.from_release(event))
        except asyncio.CancelledError:
            raise
        except Exception as e:
            log.warning(
                "training launch failed; will retry: %s", e, extra={"dataset_id": event.dataset_id}
            )

    async def launch_unlaunched(self, announced: set[str], window_s: int = 86_400) -> int:
        """Launch the recent releases that have no run yet, or whose run was recorded but not
        launched (no ``handle``: the launch failed, or the curator died in between). The
        runs table is the record: a run launched or in any later state, over_budget
        included, is never launched again."""
        if self.coordinator() is None:
            return 0
        now = time.monotonic()
        if now - self._last_launch_sweep < self.settings.launch_retry_interval_s:
            return 0
        self._last_launch_sweep = now
        rows = await self.rt.store.pool.fetch(
            "SELECT d.manifest FROM datasets d WHERE d.created_at > now() - make_interval(secs => $1)"
            " AND NOT EXISTS (SELECT 1 FROM runs r WHERE r.dataset_id = d.dataset_id"
            " AND (r.status <> 'launched' OR r.spec ? 'handle'))"
            " ORDER BY d.created_at",
            float(window_s),
        )
        n = 0
        for row in rows:
            manifest = row["manifest"]
            release = manifest.get("release") if isinstance(manifest, dict) else None
            if release is not None and release.get("dataset_id") in announced:
                await self.launch(DatasetReleased.model_validate(release))
                n += 1
        return n

    async def publish_training(self, event: TrainingRunEvent) -> None:
        box = self.rt.runner.outbox()
        await box.add(self.rt.topic(topics.TRAINING), event.run_id.encode(), event.dump_json())
        failures = await box.flush()
        if failures:
            raise failures[0][1]

    async def follow_runs(self, retry_s: float = 5.0) -> None:
        """The launcher's watcher (Job conditions, child exit codes) -> runs + events."""
        while True:
            coordinator = self.coordinator()
            if coordinator is None:
                return
            try:
                await coordinator.follow()
                return
            except asyncio.CancelledError:
                raise
            except Exception:
                log.warning("run follower failed; restarting", exc_info=True)
            await asyncio.sleep(retry_s)
