"""Launch coordination on a real Postgres: budget refusal, idempotent launch, forward-only
states with one event per change (the launcher is the in-process RecordingLauncher; the
real launchers have their own tests)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from fakes.launchers import RecordingLauncher
from rlstream.events import TrainingRunEvent
from rlstream.launch import (
    LaunchCoordinator,
    LaunchRequest,
    LaunchResult,
    LaunchSettings,
    RunSpec,
    RunUpdate,
    run_id_for,
)
from rlstream.storage import Store

pytestmark = pytest.mark.postgres


def _request(dataset: Path) -> LaunchRequest:
    m = json.loads((dataset / "manifest.json").read_text())
    return LaunchRequest(
        dataset_id=m["dataset_id"],
        agent="support-bot",
        reward_spec="customer_support",
        path=str(dataset),
        sha256=m["dataset_id"],
        method=m["method"],
    )


def _coordinator(
    store: Store, tmp_path: Path, **kw: object
) -> tuple[LaunchCoordinator, RecordingLauncher, list[TrainingRunEvent]]:
    events: list[TrainingRunEvent] = []

    async def publish(ev: TrainingRunEvent) -> None:
        events.append(ev)

    launcher = RecordingLauncher()
    settings = LaunchSettings(data_dir=tmp_path, **kw)  # type: ignore[arg-type]
    return LaunchCoordinator(launcher, store, publish, settings), launcher, events


async def test_launch_once_then_states_only_move_forward(
    store: Store, demo_dataset: Path, tmp_path: Path
) -> None:
    coord, launcher, events = _coordinator(store, tmp_path)
    req = _request(demo_dataset)
    first = await coord.submit(req)
    again = await coord.submit(req)  # a redelivered release
    assert first is not None and first.created and again is not None and not again.created
    assert len(launcher.specs) == 1 and [e.state for e in events] == ["launched"]
    run = await store.get_run(first.run_id)
    assert run is not None and run.status == "launched" and run.argv_hash
    assert run.spec["budget"]["gpu_hours"] > 0  # type: ignore[index,operator]
    spec = launcher.specs[0]
    t = coord.tracker
    await t.on_update(RunUpdate(run_id=spec.run_id, state="started", spec=spec))
    await t.on_update(RunUpdate(run_id=spec.run_id, state="succeeded", spec=spec))
    # a watcher re-listing after a restart, and a late start report: nothing changes
    await t.on_update(RunUpdate(run_id=spec.run_id, state="succeeded", spec=spec))
    await t.on_update(RunUpdate(run_id=spec.run_id, state="started", spec=spec))
    await t.on_update(RunUpdate(run_id=spec.run_id, state="failed", reason="x", spec=spec))
    assert [e.event_id for e in events] == [
        f"{spec.run_id}:launched",
        f"{spec.run_id}:started",
        f"{spec.run_id}:succeeded",
    ]
    done = await store.get_run(spec.run_id)
    assert done is not None and done.status == "succeeded"
    assert events[-1].artifact_dir == spec.output_dir and events[-1].launcher == "recording"
    assert await t.spent_today() == pytest.approx(run.spec["budget"]["gpu_hours"])  # type: ignore[index]


async def test_over_budget_is_recorded_not_launched(
    store: Store, demo_dataset: Path, tmp_path: Path
) -> None:
    coord, launcher, events = _coordinator(store, tmp_path, budget_gpu_hours_per_run=1e-12)
    assert await coord.submit(_request(demo_dataset)) is None
    assert launcher.specs == []
    [ev] = events
    assert ev.state == "over_budget" and "per-run budget" in (ev.reason or "")
    run = await store.get_run(ev.run_id)
    assert run is not None and run.status == "over_budget"
    assert run.metrics["reason"] == ev.reason
    # the same release again: still one row, one event
    assert await coord.submit(_request(demo_dataset)) is None
    assert len(events) == 1 and launcher.specs == []


async def test_a_retried_attempt_may_still_succeed(
    store: Store, demo_dataset: Path, tmp_path: Path
) -> None:
    coord, launcher, events = _coordinator(store, tmp_path)
    await coord.submit(_request(demo_dataset))
    spec = launcher.specs[0]
    t = coord.tracker
    await t.on_update(RunUpdate(run_id=spec.run_id, state="failed", reason="exit 1", spec=spec))
    await t.on_update(RunUpdate(run_id=spec.run_id, state="succeeded", spec=spec))
    await t.on_update(RunUpdate(run_id=spec.run_id, state="failed", reason="late", spec=spec))
    assert [e.state for e in events] == ["launched", "failed", "succeeded"]
    run = await store.get_run(spec.run_id)
    assert run is not None and run.status == "succeeded"


class _FastTrainerLauncher(RecordingLauncher):
    """A trainer that reports ``started`` before ``launch`` returns (a local child or a
    Job scheduled at once), then a launch that fails on its first try."""

    def __init__(self, tracker: object = None, fail_first: bool = False) -> None:
        super().__init__()
        self.tracker = tracker
        self.fail_first = fail_first

    async def launch(self, spec: RunSpec) -> LaunchResult:
        if self.fail_first:
            self.fail_first = False
            raise ConnectionError("API server unreachable")
        if self.tracker is not None:
            await self.tracker.advance(spec, "started")  # type: ignore[attr-defined]
        return await super().launch(spec)


async def test_budget_counts_a_run_whose_started_arrived_first(
    store: Store, demo_dataset: Path, tmp_path: Path
) -> None:
    """Issue 17: the estimate used to be written after the launch, so a ``started`` that
    inserted the row first left it without a budget and spent_today never counted it."""
    coord, _, _ = _coordinator(store, tmp_path)
    launcher = _FastTrainerLauncher()
    coord.launcher = launcher
    launcher.tracker = coord.tracker
    assert await coord.tracker.spent_today() == 0.0
    result = await coord.submit(_request(demo_dataset))
    assert result is not None and result.created
    run = await store.get_run(result.run_id)
    assert run is not None and run.status == "started"
    budget = run.spec["budget"]
    assert isinstance(budget, dict) and float(budget["gpu_hours"]) > 0  # type: ignore[arg-type]
    assert await coord.tracker.spent_today() == pytest.approx(float(budget["gpu_hours"]))  # type: ignore[arg-type]
    assert run.spec["handle"] is not None


async def test_a_recorded_run_whose_launch_failed_is_launched_again(
    store: Store, demo_dataset: Path, tmp_path: Path
) -> None:
    coord, _, _ = _coordinator(store, tmp_path)
    launcher = _FastTrainerLauncher(fail_first=True)
    coord.launcher = launcher
    req = _request(demo_dataset)
    with pytest.raises(ConnectionError):
        await coord.submit(req)
    run = await store.get_run(run_id_for(req.sha256))
    assert run is not None and run.status == "launched" and "handle" not in run.spec
    assert "budget" in run.spec  # recorded before the launch
    again = await coord.submit(req)  # the curator's sweep
    assert again is not None and again.created and len(launcher.specs) == 1
    assert (await coord.submit(req)) is not None and len(launcher.specs) == 1


async def test_a_dataset_with_no_method_is_refused_not_launched(
    store: Store, tmp_path: Path
) -> None:
    """A dataset whose manifest says method ``none`` is recorded as failed with the reason
    and never launched (the trainer would exit 2 on the GPU)."""
    from rlstream.curation import curate, write_dataset

    ds = tmp_path / "empty"
    write_dataset(curate([]), ds)
    assert json.loads((ds / "manifest.json").read_text())["method"] == "none"
    coord, launcher, events = _coordinator(store, tmp_path)
    req = _request(ds)
    assert await coord.submit(req) is None
    run = await store.get_run(run_id_for(req.sha256))
    assert run is not None and run.status == "failed" and not launcher.specs
    assert "recommends no training method" in str(run.metrics["reason"])
    assert [e.state for e in events] == ["failed"]
    again = await coord.submit(req)  # a redelivered release: recorded, never launched
    assert again is not None and not again.created and not launcher.specs
