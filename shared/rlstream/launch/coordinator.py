"""Release -> budget check -> launch -> recorded run: what the curator calls per release.

Idempotent end to end: the run id derives from the dataset sha256, a run already in the
runs table (in any state, even after its Job was garbage-collected) is never launched
again, and launchers themselves adopt what exists (409 on the Job name, the local
marker file).
"""

from __future__ import annotations

import asyncio
import logging
from pathlib import Path
from typing import Any

from rlstream.errors import RlstreamError
from rlstream.launch.base import Launcher, LaunchRequest, LaunchResult, RunFollower, plan_run
from rlstream.launch.runs import Publish, RunTracker, event_for
from rlstream.launch.settings import LaunchSettings

log = logging.getLogger("rlstream.launch")


class LaunchCoordinator:
    def __init__(
        self, launcher: Launcher, store: Any, publish: Publish, settings: LaunchSettings
    ) -> None:
        self.launcher = launcher
        self.settings = settings
        self.tracker = RunTracker(store, publish, launcher.name)

    @property
    def enabled(self) -> bool:
        return self.launcher.name != "none"

    async def submit(self, request: LaunchRequest) -> LaunchResult | None:
        """Launch training for a released dataset unless it was launched or is over budget."""
        if not self.enabled:
            return None
        from rlstream.training.budget import budget_for_dataset

        s = self.settings
        spec = plan_run(
            request,
            runs_dir=s.runs_path(),
            backend=s.train_backend,
            base_model=s.train_base_model,
            max_steps=s.train_max_steps,
            config=s.train_config,
        )
        t = self.tracker
        status = await t.status(spec.run_id)
        if status == "over_budget":
            return None
        if status is not None:
            return LaunchResult(run_id=spec.run_id, created=False, launcher=self.launcher.name)
        try:
            decision = await asyncio.to_thread(
                budget_for_dataset,
                Path(request.path),
                spec.method,
                spec.base_model,
                s,
                await t.spent_today(),
            )
        except (RlstreamError, OSError, ValueError) as e:
            await t.refuse(spec, "failed", f"budget check failed: {e}", {})
            return None
        budget = {"budget": decision.estimate.model_dump(mode="json")}
        if not decision.ok:
            assert decision.reason is not None
            await t.refuse(spec, "over_budget", decision.reason, budget)
            log.warning("release over budget: not launched", extra={"run_id": spec.run_id})
            return None
        result = await self.launcher.launch(spec)
        await t.publish(event_for(spec, "launched", self.launcher.name))
        await t.ensure_run(spec, "launched", {**budget, "handle": result.handle})
        log.info(
            "training launched" if result.created else "training already launched: adopted",
            extra={"run_id": spec.run_id, "handle": result.handle},
        )
        return result

    async def follow(self) -> None:
        """Report the launcher's runs forever (no-op for launchers that cannot see them)."""
        if isinstance(self.launcher, RunFollower):
            await self.launcher.follow(self.tracker.on_update)

    async def close(self) -> None:
        await self.launcher.close()
