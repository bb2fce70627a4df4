"""Release -> plan -> budget -> recorded run -> launch: what the curator (and
``rlstream train --launcher kubernetes``) calls per dataset.

The run row, with its budget estimate, is written in one statement *before* the launch,
so a ``started`` report from a fast trainer or the watcher always finds it and the run
counts in ``spent_today``. A row recorded but not launched (the launch raised, or the
process died in between) has no ``handle`` and is launched again on the next submit;
launchers adopt what exists (409 on the Job name, the local marker file). A run in any
other state is never launched again: the run id derives from the dataset sha256.
"""

from __future__ import annotations

import asyncio
import logging
from pathlib import Path
from typing import Any

from rlstream.errors import RlstreamError
from rlstream.launch.base import (
    Launcher,
    LaunchRequest,
    LaunchResult,
    RunFollower,
    RunSpec,
    plan_run,
)
from rlstream.launch.budget import BudgetDecision, budget_for_run
from rlstream.launch.runs import Publish, RunTracker, event_for
from rlstream.launch.settings import LaunchSettings
from rlstream.observability import tracing
from rlstream.training.config import TrainConfig, run_id_for
from rlstream.training.data import method_rows, resolve_config

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

    async def submit(
        self,
        request: LaunchRequest,
        config: TrainConfig | None = None,
        *,
        backend: str | None = None,
        base_model: str | None = None,
    ) -> LaunchResult | None:
        """Launch training for a dataset unless it was launched, is over budget or has
        nothing to train. ``config``/``backend``/``base_model`` default to the settings'."""
        if not self.enabled:
            return None
        run = await self.tracker.store.get_run(run_id_for(request.sha256))
        if run is not None:
            if run.status != "launched" or run.spec.get("handle") is not None:
                if run.status == "over_budget":
                    return None
                return LaunchResult(run_id=run.run_id, created=False, launcher=self.launcher.name)
            spec = RunSpec.model_validate(run.spec["run_spec"])  # recorded, not launched
        else:
            s = self.settings
            cfg = config if config is not None else s.train_config_model()
            planned = await self._plan(
                request, cfg, backend or s.train_backend, base_model or s.train_base_model
            )
            if planned is None:
                return None
            spec, decision = planned
            await self.tracker.ensure_run(
                spec, "launched", {"budget": decision.estimate.model_dump(mode="json")}
            )
        return await self._launch(spec)

    async def _plan(
        self, request: LaunchRequest, config: TrainConfig, backend: str, model: str | None
    ) -> tuple[RunSpec, BudgetDecision] | None:
        """The run and its budget; a refusal (nothing to train, over budget) is recorded."""
        s, t = self.settings, self.tracker
        spec = plan_run(
            request, runs_dir=s.runs_path(), config=config, backend=backend, base_model=model
        )
        if s.train_on_policy and spec.config.on_policy is None:
            champion = await t.store.get_alias(request.agent, "champion")
            if champion is None:
                why = f"on-policy training: agent {request.agent!r} has no champion to train from"
                await t.refuse(spec, "failed", why, {})
                return None
            on = spec.config.model_copy(update={"on_policy": champion})
            spec = spec.model_copy(update={"config": on})
        try:
            manifest, cfg = await asyncio.to_thread(resolve_config, Path(request.path), spec.config)
        except (RlstreamError, OSError, ValueError) as e:
            await t.refuse(spec, "failed", f"not trainable: {e}", {})
            log.warning("release not trainable: not launched", extra={"run_id": spec.run_id})
            return None
        spec = spec.model_copy(update={"config": cfg})
        try:
            decision = budget_for_run(
                cfg,
                rows=method_rows(manifest, cfg),
                backend=backend,
                model=model,
                settings=s,
                spent_today=await t.spent_today(),
            )
        except (RlstreamError, OSError, ValueError) as e:
            await t.refuse(spec, "failed", f"budget check failed: {e}", {})
            return None
        if not decision.ok:
            assert decision.reason is not None
            budget = {"budget": decision.estimate.model_dump(mode="json")}
            await t.refuse(spec, "over_budget", decision.reason, budget)
            log.warning("release over budget: not launched", extra={"run_id": spec.run_id})
            return None
        return spec, decision

    async def _launch(self, spec: RunSpec) -> LaunchResult:
        attrs = {"rlstream.run_id": spec.run_id, "rlstream.launcher": self.launcher.name}
        with tracing.span("launch", attributes=attrs):  # the trainer's TRACEPARENT
            result = await self.launcher.launch(spec)
            await self.tracker.publish(event_for(spec, "launched", self.launcher.name))
        await self.tracker.record_handle(spec.run_id, result.handle)
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
