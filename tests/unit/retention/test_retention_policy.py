"""RetentionPolicy and its settings: 0 keeps for ever, the defaults, the report's lines."""

from __future__ import annotations

from datetime import timedelta

import pytest
from pydantic import ValidationError

from rlstream.retention import KINDS, RetentionPolicy, RetentionReport, RetentionSettings

pytestmark = pytest.mark.unit

DAY = timedelta(days=1)


def test_defaults_remove_something_of_every_kind_and_keep_ten_releases() -> None:
    p = RetentionPolicy()
    assert all(p.applies(k) for k in KINDS)
    assert (p.turn_buffers, p.pending_rollouts, p.datasets, p.run_artifacts) == (
        7 * DAY,
        30 * DAY,
        30 * DAY,
        14 * DAY,
    )
    assert p.datasets_keep == 10


def test_zero_keeps_for_ever_and_negative_is_refused() -> None:
    p = RetentionPolicy(turn_buffers=timedelta(0), datasets_keep=0)
    assert p.turn_buffers is None and not p.applies("turn_buffers")
    assert p.datasets_keep is None and not p.applies("datasets")  # either unset keeps all
    assert not RetentionPolicy(datasets=None).applies("datasets")
    with pytest.raises(ValidationError, match="cannot be negative"):
        RetentionPolicy(pending_rollouts=-DAY)
    with pytest.raises(ValidationError):
        RetentionPolicy(datasets_keep=-1)
    assert not any(RetentionPolicy.keep_everything().applies(k) for k in KINDS)


def test_the_policy_is_frozen() -> None:
    with pytest.raises(ValidationError):
        RetentionPolicy().turn_buffers = None  # type: ignore[misc]


def test_settings_map_seconds_to_the_policy(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("RLSTREAM_RETENTION_TURN_BUFFERS_S", "0")
    monkeypatch.setenv("RLSTREAM_RETENTION_PENDING_ROLLOUTS_S", "3600")
    monkeypatch.setenv("RLSTREAM_RETENTION_DATASETS_KEEP", "3")
    monkeypatch.setenv("RLSTREAM_RETENTION_RUN_ARTIFACTS_S", "0")
    monkeypatch.setenv("RLSTREAM_DATA_DIR", "/srv/rl")
    s = RetentionSettings()
    p = s.retention_policy()
    assert p.turn_buffers is None and p.run_artifacts is None
    assert p.pending_rollouts == timedelta(hours=1)
    assert p.datasets_keep == 3 and p.datasets == 30 * DAY
    assert str(s.datasets_path()) == "/srv/rl/datasets"
    assert s.retention_interval_s == 3600


def test_settings_refuse_a_negative_period(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("RLSTREAM_RETENTION_DATASETS_S", "-1")
    with pytest.raises(ValidationError):
        RetentionSettings()


def test_describe_names_every_kind() -> None:
    assert RetentionPolicy().describe() == (
        "turn_buffers 7d, pending_rollouts 30d, datasets beyond the newest 10 per agent and "
        "30d, run_artifacts 14d"
    )
    short = RetentionPolicy(turn_buffers=timedelta(seconds=90), datasets=None)
    assert short.describe().startswith("turn_buffers 90s, ")
    assert "datasets for ever" in short.describe()


def test_report_lines_say_what_went_and_what_stayed() -> None:
    r = RetentionReport(
        dry_run=True,
        removed={"turn_buffers": 2, "datasets": 1},
        bytes={"datasets": 2_500_000},
        skipped={"datasets": 1},
    )
    assert r.lines() == [
        "turn_buffers: would remove 2 closed turn buffer(s)",
        "pending_rollouts: kept for ever (no retention set)",
        "datasets: would remove 1 dataset release(s) (training files), 2.5 MB; "
        "1 left in place (see the log)",
        "run_artifacts: kept for ever (no retention set)",
    ]
    assert RetentionReport(dry_run=False, removed={"run_artifacts": 0}).lines()[3] == (
        "run_artifacts: removed 0 run folder(s)"
    )
