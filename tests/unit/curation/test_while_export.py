"""``rlstream export while``: a curated dataset's kept rollouts as While rows that validate
against the installed whileai package's own ``row-v1.json``, end to end through the CLI
(While rows -> ingest -> grade -> curate -> export)."""

from __future__ import annotations

import json
from importlib import resources
from pathlib import Path
from typing import Any

import jsonschema
import pytest
from typer.testing import CliRunner
from whileai.simulations.schema import (
    Judgment,
    Marker,
    PolicyRef,
    Rollout,
    ScorerRef,
    Step,
    Task,
    from_row,
    to_row,
)

from rlstream.curation import verify_dataset
from rlstream.formats import detect_format, parse_record
from rlstream.jsonl import read_scored
from rlstream.services.cli.main import app

pytestmark = pytest.mark.unit
runner = CliRunner()

SCHEMA = json.loads(
    (resources.files("whileai.simulations") / "schemas" / "row-v1.json").read_text()
)
VALIDATOR = jsonschema.Draft202012Validator(SCHEMA)

_REPLIES = [
    "Your parcel left the depot this morning and should arrive on Thursday.",
    "I checked with the courier: delivery is planned for the end of the week.",
    "Sorry, I cannot see that order anywhere, could you send the number again?",
    "Please wait while I escalate this to a colleague who handles missing items.",
]
_TASKS = {
    "sc-parcel": "Where is my parcel? It should have come on Monday.",
    "sc-refund": "I would like my money back for the broken kettle.",
    "sc-address": "Can you change the delivery address to my office?",
}


def _rows() -> list[dict[str, Any]]:
    """Four rollouts per task from whileai's to_row: two pass, two fail (a 50% group), tool
    steps (one that also speaks), step facts, markers and the conduct rule's verdict."""
    rows = []
    for task_id, prompt in _TASKS.items():
        task = Task(task_id=task_id, prompt=prompt, axes={"tier": "ordinary"})
        for i, reply in enumerate(_REPLIES):
            steps = [
                Step(
                    tool="lookup_order",
                    arguments={"task": task_id, "try": i},
                    result={"status": "in transit", "try": i},
                    text="Let me look that up." if i == 1 else None,
                ),
                Step(text=f"{reply} ({task_id})", n_tokens=20 + i),
            ]
            rollout = Rollout(
                rollout_id=f"{task_id}-{i}",
                task_id=task_id,
                policy=PolicyRef(name="bot", model="bot-v2", version="bot-v2@5e1f"),
                index=i,
                steps=steps,
                final_text=f"{reply} ({task_id})",
                extra={"rollout_index_present": True, "finish_reason": "stop"},
            )
            verdict = Judgment(
                rollout_id=rollout.rollout_id,
                scorer=ScorerRef(name="conduct", kind="rule"),
                reward=1 if i < 2 else 0,
                reason="answered" if i < 2 else "did not answer",
            )
            marker = Marker(rollout_id=rollout.rollout_id, name="asked_first", value=float(i % 2))
            rows.append(to_row(task, rollout, [verdict], [marker]))
    return rows


def _invoke(*args: str) -> str:
    result = runner.invoke(app, list(args))
    assert result.exit_code == 0, result.output
    return result.output


@pytest.fixture(scope="module")
def exported(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    d = tmp_path_factory.mktemp("while")
    src = _rows()
    (d / "rows.jsonl").write_text("".join(json.dumps(r) + "\n" for r in src))
    _invoke("ingest", str(d / "rows.jsonl"), "--out", str(d / "t.jsonl"))
    _invoke("grade", "--in", str(d / "t.jsonl"), "--out", str(d / "s.jsonl"), "--reward", "outcome")
    _invoke(
        "curate",
        "--in",
        str(d / "s.jsonl"),
        "--out",
        str(d / "ds"),
        "--heldout-share",
        "0",
        "--granularity",
        "conversation",
    )
    out = _invoke(
        "export",
        "while",
        "--dataset",
        str(d / "ds"),
        "--in",
        str(d / "s.jsonl"),
        "--out",
        str(d / "while.jsonl"),
    )
    rows = [json.loads(line) for line in (d / "while.jsonl").read_text().splitlines()]
    return {"dir": d, "src": src, "rows": rows, "output": out}


def test_every_kept_rollout_is_a_valid_row(exported: dict[str, Any]) -> None:
    rows = exported["rows"]
    manifest = verify_dataset(exported["dir"] / "ds")
    assert len(rows) == manifest.counts["kept_rollouts"] == 12
    assert "wrote 12 While rows (3 task groups)" in exported["output"]
    for row in rows:
        errors = [f"{list(e.absolute_path)}: {e.message[:160]}" for e in VALIDATOR.iter_errors(row)]
        assert errors == []


def test_rows_carry_rlstreams_verdict_and_the_source_fields(exported: dict[str, Any]) -> None:
    src = {(r["scenario_id"], r["rollout_index"]): r for r in exported["src"]}
    scored = {s.rollout_id: s for s in read_scored(exported["dir"] / "s.jsonl")}
    for row in exported["rows"]:
        before = src[(row["scenario_id"], row["rollout_index"])]
        assert row["reward"] == before["reward"]  # outcome reads the logged reward as is
        assert row["label_source"] == "outcome"
        assert row["group_id"] == f"scenario_id:{row['scenario_id']}"
        meta = row["judge_meta"]
        assert meta["source"] == {k: before[k] for k in ("reward", "reason", "label_source")}
        assert meta["version"] == scored[meta["rlstream"]["rollout_id"]].reward_spec
        assert row["markers"]["asked_first"] == before["markers"]["asked_first"]
        assert row["markers"]["rlstream.outcome.task_reward"] == before["reward"]
        kept = set(before) - {"reward", "reason", "label_source", "markers", "steps", "messages"}
        assert {k: row[k] for k in kept} == {k: before[k] for k in kept}
        assert from_row(row)[2][0].scorer.name == "outcome"  # whileai reads the new verdict


def test_a_tool_step_that_spoke_is_split_so_the_row_validates(exported: dict[str, Any]) -> None:
    for row in exported["rows"]:
        before = next(
            r
            for r in exported["src"]
            if (r["scenario_id"], r["rollout_index"]) == (row["scenario_id"], row["rollout_index"])
        )
        if row["rollout_index"] != 1:
            assert row["steps"] == before["steps"]
            continue
        spoken = before["steps"][0]
        assert "text" in spoken and list(VALIDATOR.iter_errors(before))  # whileai's own shape
        assert row["steps"][0] == {"text": spoken["text"]}
        assert {k: row["steps"][1][k] for k in ("tool", "arguments", "result")} == {
            k: spoken[k] for k in ("tool", "arguments", "result")
        }
        assert row["steps"][2:] == before["steps"][1:]


def test_exported_rows_come_back_into_rlstream(exported: dict[str, Any]) -> None:
    for row in exported["rows"]:
        assert detect_format(row) == "while"
        t = parse_record(row)
        assert t.outcome["label_source"] == "outcome" and t.metadata["group_id"]
        assert [m.role for m in t.messages] == ["user", "assistant", "tool", "assistant"]


def test_a_scored_file_that_is_not_the_datasets_is_refused(
    exported: dict[str, Any], tmp_path: Path
) -> None:
    d = exported["dir"]
    lines = (d / "s.jsonl").read_text().splitlines()
    (tmp_path / "partial.jsonl").write_text("\n".join(lines[:3]) + "\n")
    result = runner.invoke(
        app,
        [
            "export",
            "while",
            "--dataset",
            str(d / "ds"),
            "--in",
            str(tmp_path / "partial.jsonl"),
            "--out",
            str(tmp_path / "w.jsonl"),
        ],
    )
    assert result.exit_code != 0
    assert "lacks 9 of the dataset's 12 kept rollouts" in result.output
    assert not (tmp_path / "w.jsonl").exists()
