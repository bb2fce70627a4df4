"""What an erasure does beyond the rows, decided purely; the report's lines; the release
lock it shares with the curator; the CLI's one-line refusals."""

from __future__ import annotations

from pathlib import Path

import pytest
from typer.testing import CliRunner

from rlstream.erasure import ErasureReport, plan_effects
from rlstream.storage import ErasedRollout, release_lock_name

pytestmark = pytest.mark.unit

ROOT = Path(__file__).resolve().parents[3]


def _r(rid: str, released: str | None) -> ErasedRollout:
    return ErasedRollout(
        rollout_id=rid, conversation_id="c", agent="a", reward_spec="s", task_key="k",
        score=1.0, passed=True, released_in=released,
    )  # fmt: skip


def test_plan_rewrites_released_datasets_scrubs_final_runs_and_flags_champions() -> None:
    plan = plan_effects(
        [_r("r1", "d1"), _r("r2", None)],
        [("d1", "/data/d1"), ("d2", "/data/d2")],
        [("run-a", "/runs/a", "succeeded"), ("run-b", "/runs/b", "started")],
        ["m1", "m2"],
        [("a", "champion", "m2"), ("a", "challenger", "m1"), ("b", "champion", "other")],
        datasets="revoke",
        champion="keep",
    )
    assert [(d.dataset_id, d.action) for d in plan.datasets] == [("d1", "revoke")]
    assert [(r.run_id, r.scrub) for r in plan.runs] == [("run-a", True), ("run-b", False)]
    assert [(c.agent, c.model_id) for c in plan.champions] == [("a", "m2")]
    report = ErasureReport(
        erasure_id="e1", dry_run=False, selector="a user key", status="done",
        counts={"transcripts": 2, "rollouts": 2, "released_rollouts": 1}, plan=plan,
    )  # fmt: skip
    text = "\n".join(report.lines())
    assert "e1: erased a user key: 2 conversation(s), 2 rollout(s) (1 released)" in text
    assert "run run-b trained on it (started): left (open run)" in text
    assert "model m2 trained on it" in text and text.endswith("status done in 0.00 s")


def test_the_release_lock_is_the_curators() -> None:
    source = (ROOT / "services/rlstream/services/curator/handler.py").read_text()
    assert "release_lock_name(agent, reward_spec)" in source
    assert release_lock_name("a", "s") == release_lock_name("a", "s") != release_lock_name("a", "t")


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--user-key", "a", "--agent", "b"], "give one of --conversation"),
        (["--field", "email", "--agent", "b"], "--field goes with --user-key"),
        ([], "give what to erase"),
        (["--resume", "e1", "--dry-run"], "has no --dry-run"),
        (["--user-key", " "], "--user-key is empty"),
    ],
)
def test_cli_refusals_are_one_line(args: list[str], message: str) -> None:
    from rlstream.services.cli.main import app

    res = CliRunner().invoke(app, ["erase", *args])
    assert res.exit_code == 2, res.output
    assert message in res.output and res.output.count("\n") == 1


def test_no_shipped_topic_is_compacted() -> None:
    """docs/erasure.md: every topic as shipped expires by retention; tombstones only reach
    topics an operator made compacted."""
    from rlstream.events.topic_table import DEFAULT_TABLE

    assert {s.config["cleanup.policy"] for s in DEFAULT_TABLE} == {"delete"}
