"""A second ``rlstream demo --cycles`` in the same folder starts from the base model again:
the first run's served log (appended to, same conversation ids for a seed), its cycle
folders and its embedded registry (rollouts already released, a champion) are gone, and
the registry lives in the folder, not in the working directory's shared data dir."""

from __future__ import annotations

from pathlib import Path

import pytest
from pydantic import SecretStr

from rlstream.pipeline.cycles import STATE_DIR, CyclesConfig, _fresh_start
from rlstream.settings import Settings

pytestmark = pytest.mark.unit


def _earlier_run(folder: Path) -> list[Path]:
    files = [
        folder / "out" / "served.jsonl",
        folder / "out" / "cycles.json",
        folder / "out" / "cycle1" / "report.json",
        folder / "logs" / "served-cycle1.jsonl",
        folder / "logs" / "production-cycle2.jsonl",
        folder / STATE_DIR / "postgres" / "PG_VERSION",
    ]
    for f in files:
        f.parent.mkdir(parents=True, exist_ok=True)
        f.write_text("earlier run\n")
    return files


def test_embedded_state_is_the_folders_own_and_starts_empty(tmp_path: Path) -> None:
    files = _earlier_run(tmp_path)
    keep = tmp_path / "logs" / "mine.jsonl"
    keep.write_text("not the demo's\n")
    settings = _fresh_start(CyclesConfig(folder=tmp_path), Settings())
    assert settings.data_dir == tmp_path / STATE_DIR
    assert [f for f in files if f.exists()] == []
    assert keep.exists()


def test_dir_dot_leaves_the_working_directorys_data_dir_alone(tmp_path: Path) -> None:
    shared = tmp_path / ".rlstream" / "postgres" / "PG_VERSION"  # make demo's, rlstream up's
    shared.parent.mkdir(parents=True)
    shared.write_text("16\n")
    _fresh_start(CyclesConfig(folder=tmp_path), Settings())
    assert shared.exists()


def test_a_configured_database_is_left_alone(tmp_path: Path) -> None:
    _earlier_run(tmp_path)
    given = Settings(postgres_dsn=SecretStr("postgresql://x@db/x"), data_dir=tmp_path / "d")
    settings = _fresh_start(CyclesConfig(folder=tmp_path), given)
    assert settings is given
    assert (tmp_path / STATE_DIR / "postgres" / "PG_VERSION").exists()
    assert not (tmp_path / "out" / "served.jsonl").exists()
