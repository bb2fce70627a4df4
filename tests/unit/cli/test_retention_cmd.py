"""``rlstream retention run``: help with examples, one-line errors (no database needed)."""

from __future__ import annotations

import pytest
from typer.testing import CliRunner

from rlstream.services.cli.main import app

pytestmark = pytest.mark.unit
runner = CliRunner()


def test_help_names_the_policy_and_has_examples() -> None:
    res = runner.invoke(app, ["retention", "run", "--help"])
    assert res.exit_code == 0
    text = " ".join(res.output.split())
    assert "RLSTREAM_RETENTION_*" in text and "Examples" in text
    assert "rlstream retention run --dry-run" in text and "--runs-dir" in text
    assert "retention" in runner.invoke(app, ["--help"]).output


def test_an_unreachable_database_is_one_line(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("RLSTREAM_DEBUG", raising=False)
    res = runner.invoke(app, ["retention", "run", "--dsn", "postgresql://u@127.0.0.1:1/db"])
    assert res.exit_code != 0
    lines = [ln for ln in res.output.splitlines() if ln.strip()]
    assert lines[0].startswith("policy: turn_buffers 7d")
    assert len(lines) == 2 and lines[1].startswith("error")
    assert "Traceback" not in res.output


def test_a_negative_period_is_one_line(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("RLSTREAM_RETENTION_RUN_ARTIFACTS_S", "-5")
    res = runner.invoke(app, ["retention", "run", "--dsn", "postgresql://u@127.0.0.1:1/db"])
    assert res.exit_code == 2
    assert res.output.strip().startswith("error: invalid option retention_run_artifacts_s")
