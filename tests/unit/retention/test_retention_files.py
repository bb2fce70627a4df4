"""Removing files from database paths: only strictly inside the configured roots, never a
link, never a kept model's weights; a pruned release keeps its manifest and held-out set."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from rlstream.retention.files import (
    PRUNED_MARKER,
    TRAINING_FILES,
    inside,
    prune_release,
    remove_run_folder,
)

pytestmark = pytest.mark.unit


def _release(path: Path) -> Path:
    path.mkdir(parents=True)
    for name, size in (("grpo.jsonl", 100), ("dpo.jsonl", 20), ("sft.jsonl", 3)):
        (path / name).write_bytes(b"x" * size)
    for name in ("manifest.json", "heldout.jsonl", "next_steps.md"):
        (path / name).write_text("{}")
    return path


def test_the_training_files_are_data_files_of_the_writer() -> None:
    from rlstream.curation.writer import DATA_FILES

    assert set(TRAINING_FILES) < set(DATA_FILES)
    assert "heldout.jsonl" not in TRAINING_FILES


def test_inside_is_strict_and_resolves_links(tmp_path: Path) -> None:
    root = tmp_path / "datasets"
    (root / "a").mkdir(parents=True)
    (tmp_path / "elsewhere").mkdir()
    (root / "link").symlink_to(tmp_path / "elsewhere")
    assert inside(root / "a", [root])
    assert inside(root / "missing" / "deeper", [root])
    assert not inside(root, [root])  # never the root itself
    assert not inside(root / "..", [root])
    assert not inside(tmp_path / "elsewhere", [root])
    assert not inside(root / "link", [root])  # resolves outside
    assert inside(tmp_path / "elsewhere", [root, tmp_path])


def test_prune_removes_only_training_files_and_says_so(tmp_path: Path) -> None:
    root = tmp_path / "datasets"
    ds = _release(root / "ds1")
    assert prune_release(ds, [root], dry_run=False) == ("removed", 123)
    left = sorted(p.name for p in ds.iterdir())
    assert left == ["heldout.jsonl", "manifest.json", "next_steps.md", PRUNED_MARKER]
    marker = json.loads((ds / PRUNED_MARKER).read_text())
    assert marker["removed"] == ["dpo.jsonl", "grpo.jsonl", "sft.jsonl"]
    assert prune_release(ds, [root], dry_run=False) == ("absent", 0)  # idempotent


def test_prune_dry_run_counts_and_touches_nothing(tmp_path: Path) -> None:
    root = tmp_path / "datasets"
    ds = _release(root / "ds1")
    before = sorted(p.name for p in ds.iterdir())
    assert prune_release(ds, [root], dry_run=True) == ("removed", 123)
    assert sorted(p.name for p in ds.iterdir()) == before


def test_prune_refuses_paths_outside_the_root_and_links(tmp_path: Path) -> None:
    root = tmp_path / "datasets"
    root.mkdir()
    outside = _release(tmp_path / "user-output")
    assert prune_release(outside, [root], dry_run=False) == ("skipped", 0)
    (root / "linked").symlink_to(outside)
    assert prune_release(root / "linked", [root], dry_run=False) == ("skipped", 0)
    assert (outside / "grpo.jsonl").is_file()
    assert prune_release(root / "gone", [root], dry_run=False) == ("absent", 0)


def test_run_folder_is_removed_whole(tmp_path: Path) -> None:
    root = tmp_path / "runs"
    run = root / "run-1"
    (run / "adapter").mkdir(parents=True)
    (run / "adapter" / "weights.bin").write_bytes(b"w" * 1000)
    (run / "trainer.log").write_bytes(b"l" * 24)
    assert remove_run_folder(run, [root], [], dry_run=True) == ("removed", 1024)
    assert run.is_dir()
    assert remove_run_folder(run, [root], [], dry_run=False) == ("removed", 1024)
    assert not run.exists() and root.is_dir()
    assert remove_run_folder(run, [root], [], dry_run=False) == ("absent", 0)


def test_run_folder_holding_a_kept_model_or_outside_stays(tmp_path: Path) -> None:
    root = tmp_path / "runs"
    run = root / "run-1"
    (run / "adapter").mkdir(parents=True)
    kept = [run / "adapter"]
    assert remove_run_folder(run, [root], kept, dry_run=False) == ("skipped", 0)
    assert remove_run_folder(run / "adapter", [root], [run], dry_run=False) == ("skipped", 0)
    assert remove_run_folder(root, [root], [], dry_run=False) == ("skipped", 0)
    other = tmp_path / "home" / "me"
    other.mkdir(parents=True)
    assert remove_run_folder(other, [root], [], dry_run=False) == ("skipped", 0)
    (root / "ln").symlink_to(other)
    assert remove_run_folder(root / "ln", [root], [], dry_run=False) == ("skipped", 0)
    (root / "file").write_text("not a folder")
    assert remove_run_folder(root / "file", [root], [], dry_run=False) == ("skipped", 0)
    assert run.is_dir() and other.is_dir() and (root / "file").is_file()
