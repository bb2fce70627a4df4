"""apply_retention: which store calls a policy makes, dry run only counts, per-kind report."""

from __future__ import annotations

from datetime import timedelta
from pathlib import Path

import pytest

from rlstream.retention import RetentionPolicy, apply_retention

pytestmark = pytest.mark.unit


class FakeStore:
    def __init__(self, datasets: list[tuple[str, str]], runs: list[tuple[str, str]]) -> None:
        self.calls: list[str] = []
        self.datasets = datasets
        self.runs = runs

    async def count_closed_buffers(self, older_than: timedelta) -> int:
        self.calls.append("count_closed_buffers")
        return 3

    async def purge_closed_buffers(self, older_than: timedelta) -> int:
        self.calls.append("purge_closed_buffers")
        return 3

    async def count_pending_rollouts(self, older_than: timedelta) -> int:
        self.calls.append("count_pending_rollouts")
        return 5

    async def purge_pending_rollouts(self, older_than: timedelta) -> int:
        self.calls.append(f"purge_pending_rollouts {older_than.days}")
        return 5

    async def prunable_datasets(
        self, keep_newest: int, older_than: timedelta
    ) -> list[tuple[str, str]]:
        self.calls.append(f"prunable_datasets {keep_newest}")
        return self.datasets

    async def expired_run_artifacts(self, older_than: timedelta) -> list[tuple[str, str]]:
        self.calls.append("expired_run_artifacts")
        return self.runs

    async def kept_model_paths(self) -> list[str]:
        self.calls.append("kept_model_paths")
        return []


def _tree(tmp_path: Path) -> tuple[Path, Path, FakeStore]:
    data, runs = tmp_path / "datasets", tmp_path / "runs"
    (data / "old").mkdir(parents=True)
    (data / "old" / "grpo.jsonl").write_bytes(b"g" * 10)
    (runs / "r1").mkdir(parents=True)
    (runs / "r1" / "log").write_bytes(b"l" * 7)
    store = FakeStore(
        datasets=[("old", str(data / "old")), ("gone", str(data / "gone"))],
        runs=[("r1", str(runs / "r1")), ("r2", "/etc")],
    )
    return data, runs, store


async def test_a_pass_removes_every_kind_and_reports_it(tmp_path: Path) -> None:
    data, runs, store = _tree(tmp_path)
    report = await apply_retention(store, RetentionPolicy(), dataset_roots=[data], run_roots=[runs])
    assert report.removed == {
        "turn_buffers": 3,
        "pending_rollouts": 5,
        "datasets": 1,
        "run_artifacts": 1,
    }
    assert report.bytes == {"datasets": 10, "run_artifacts": 7}
    assert report.skipped == {"datasets": 0, "run_artifacts": 1}  # /etc: outside the root
    assert "purge_closed_buffers" in store.calls and "purge_pending_rollouts 30" in store.calls
    assert not (data / "old" / "grpo.jsonl").exists() and not (runs / "r1").exists()


async def test_dry_run_counts_with_the_same_selection_and_removes_nothing(
    tmp_path: Path,
) -> None:
    data, runs, store = _tree(tmp_path)
    report = await apply_retention(
        store, RetentionPolicy(), dataset_roots=[data], run_roots=[runs], dry_run=True
    )
    assert report.dry_run and report.removed["datasets"] == 1
    assert report.removed["run_artifacts"] == 1
    assert not any(c.startswith("purge") for c in store.calls)
    assert (data / "old" / "grpo.jsonl").exists() and (runs / "r1").exists()


async def test_kinds_kept_for_ever_are_not_even_selected(tmp_path: Path) -> None:
    data, runs, store = _tree(tmp_path)
    report = await apply_retention(
        store, RetentionPolicy.keep_everything(), dataset_roots=[data], run_roots=[runs]
    )
    assert report.removed == {} and store.calls == []
    policy = RetentionPolicy(turn_buffers=None, pending_rollouts=None, run_artifacts=None)
    await apply_retention(store, policy, dataset_roots=[data], run_roots=[runs])
    assert store.calls == ["prunable_datasets 10"]


async def test_a_file_system_error_is_counted_and_the_pass_goes_on(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    data, runs, store = _tree(tmp_path)

    def refuse(path: object, *a: object, **k: object) -> None:
        raise PermissionError(13, "Permission denied", str(path))

    monkeypatch.setattr("rlstream.retention.files.shutil.rmtree", refuse)
    report = await apply_retention(store, RetentionPolicy(), dataset_roots=[data], run_roots=[runs])
    assert report.removed["run_artifacts"] == 0 and report.skipped["run_artifacts"] == 2
    assert report.removed["datasets"] == 1
