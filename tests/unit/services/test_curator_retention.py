"""The curator's retention task: a pass counts what went in
rlstream_retention_removed_total{kind}; a failed pass is logged and returns None."""

from __future__ import annotations

import asyncio
from datetime import timedelta
from pathlib import Path
from types import SimpleNamespace

import pytest
from prometheus_client import REGISTRY

from rlstream.services.curator import retention
from rlstream.services.curator.settings import CuratorSettings

pytestmark = pytest.mark.unit


def _value(kind: str) -> float:
    v = REGISTRY.get_sample_value("rlstream_retention_removed_total", {"kind": kind})
    return v or 0.0


class Store:
    def __init__(self) -> None:
        self.fail = False

    async def purge_closed_buffers(self, older_than: timedelta) -> int:
        if self.fail:
            raise OSError("postgres away")
        return 2

    async def purge_pending_rollouts(self, older_than: timedelta) -> int:
        return 0

    async def prunable_datasets(self, keep: int, older_than: timedelta) -> list[tuple[str, str]]:
        return []

    async def expired_run_artifacts(self, older_than: timedelta) -> list[tuple[str, str]]:
        return []

    async def kept_model_paths(self) -> list[str]:
        return []


def _settings(tmp_path: Path, **kw: object) -> CuratorSettings:
    return CuratorSettings(data_dir=tmp_path, **kw)  # type: ignore[arg-type]


async def test_a_pass_counts_rows_removed_per_kind(tmp_path: Path) -> None:
    before = _value("turn_buffers"), _value("pending_rollouts")
    report = await retention.retention_pass(Store(), _settings(tmp_path))
    assert report is not None and report.removed["turn_buffers"] == 2
    assert _value("turn_buffers") == before[0] + 2
    assert _value("pending_rollouts") == before[1]


async def test_a_failed_pass_is_logged_and_tried_again(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    store = Store()
    store.fail = True
    assert await retention.retention_pass(store, _settings(tmp_path)) is None
    assert "retention pass failed" in caplog.text


async def test_the_loop_runs_a_first_pass_soon_and_exports_every_kind(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    passes: list[object] = []

    async def fake_pass(store: object, settings: object) -> None:
        passes.append(store)

    monkeypatch.setattr(retention, "retention_pass", fake_pass)
    monkeypatch.setattr(retention, "FIRST_PASS_AFTER_S", 0.01)
    settings = _settings(tmp_path, retention_interval_s=0.02)
    task = asyncio.create_task(retention.retention_loop(SimpleNamespace(store="S"), settings))
    await asyncio.sleep(0.2)
    task.cancel()
    assert len(passes) >= 2 and set(passes) == {"S"}
    for kind in ("turn_buffers", "pending_rollouts", "datasets", "run_artifacts"):
        assert (
            REGISTRY.get_sample_value("rlstream_retention_removed_total", {"kind": kind})
            is not None
        )
