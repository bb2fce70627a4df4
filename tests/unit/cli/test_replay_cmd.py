"""``rlstream replay`` and ``rlstream dlq``: help, and one-line errors for what is wrong
before any broker is asked (the Kafka paths are tests/integration/services)."""

from __future__ import annotations

import pytest
from typer.testing import CliRunner

from rlstream.services.cli.main import app

pytestmark = pytest.mark.unit
runner = CliRunner()


def _one_line_error(args: list[str]) -> str:
    res = runner.invoke(app, args)
    assert res.exit_code != 0 and "Traceback" not in res.output
    (line,) = [ln for ln in res.output.splitlines() if ln.strip()]
    assert line.startswith("error")
    return line


def test_help_lists_replay_and_the_dlq_subcommands() -> None:
    assert "replay" in runner.invoke(app, ["--help"]).output
    dlq = runner.invoke(app, ["dlq", "--help"]).output
    assert all(c in dlq for c in ("list", "show", "replay"))
    text = " ".join(runner.invoke(app, ["replay", "--help"]).output.split())
    assert "--from-offset" in text and "--since" in text and "docs/replay.md" in text


@pytest.mark.parametrize(
    "args",
    [
        ["replay", "--topic", "t"],
        ["replay", "--topic", "t", "--from-offset", "0", "--since", "1h"],
    ],
)
def test_replay_wants_exactly_one_start(args: list[str]) -> None:
    assert "exactly one of --from-offset N or --since TIME" in _one_line_error(args)


def test_unreadable_times_and_coordinates_are_one_line() -> None:
    assert "as a time" in _one_line_error(["replay", "--topic", "t", "--since", "soon"])
    assert "as a time" in _one_line_error(["dlq", "list", "t", "--since", "soon"])
    assert "PARTITION/OFFSET" in _one_line_error(["dlq", "show", "t", "--at", "7"])
    assert "before --until" in _one_line_error(
        ["dlq", "replay", "t", "--since", "1h", "--until", "2h"]
    )
