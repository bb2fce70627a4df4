"""--outcome-field names the outcome whatever it is called: booleans, numbers, mapped strings."""

from __future__ import annotations

from pathlib import Path

import orjson
import pytest
from typer.testing import CliRunner

from rlstream.errors import RewardError, SchemaViolation
from rlstream.formats import FieldMapping, parse_record
from rlstream.rewards import RewardContext
from rlstream.rewards.outcome import OutcomeReward
from rlstream.services.cli.main import app

pytestmark = pytest.mark.unit


def _rec(i: int, **outcome: object) -> dict[str, object]:
    return {
        "id": f"c{i}",
        "task_id": "t",
        "messages": [
            {"role": "user", "content": "2+2?"},
            {"role": "assistant", "content": "4"},
        ],
        **outcome,
    }


def _score(record: dict[str, object], mapping: FieldMapping) -> float:
    t = parse_record(record, "auto", mapping)
    return OutcomeReward()(t, RewardContext()).score


@pytest.mark.parametrize(
    ("field", "value", "score"),
    [
        ("is_correct", True, 1.0),
        ("is_correct", False, 0.0),
        ("meta.judge.correct", True, 1.0),
        ("grade", 0.25, 0.25),
        ("grade", 1, 1.0),
        ("verdict", "pass", 1.0),
        ("verdict", "FAILED", 0.0),
    ],
)
def test_a_mapped_field_of_any_name_is_the_outcome(field: str, value: object, score: float) -> None:
    rec = _rec(1)
    *path, leaf = field.split(".")
    node = rec
    for p in path:
        node = node.setdefault(p, {})  # type: ignore[assignment]
    node[leaf] = value  # type: ignore[index]
    assert _score(rec, FieldMapping(outcome_field=field)) == score


def test_mapped_strings_go_through_the_value_map() -> None:
    m = FieldMapping(outcome_field="status", outcome_values={"resolved": 1.0, "escalated": 0.0})
    assert _score(_rec(1, status="Resolved"), m) == 1.0
    assert _score(_rec(2, status="escalated"), m) == 0.0
    with pytest.raises(SchemaViolation, match="value map"):
        parse_record(_rec(3, status="pending"), "auto", m)
    unmapped = parse_record(
        _rec(4, status="escalated"), "auto", FieldMapping(outcome_field="status")
    )
    with pytest.raises(RewardError, match="--outcome-values"):
        OutcomeReward()(unmapped, RewardContext())


def test_standard_keys_keep_their_scale() -> None:
    # csat mapped by name keeps its 1-5 scale; "value" is only the fallback
    assert _score(_rec(1, csat=4), FieldMapping(outcome_field="csat")) == 0.75


def test_cli_is_correct_grades_every_record(tmp_path: Path) -> None:
    logs = tmp_path / "l.jsonl"
    logs.write_text(
        "".join(orjson.dumps(_rec(i, is_correct=i % 2 == 0)).decode() + "\n" for i in range(4))
    )
    runner = CliRunner()
    t, s = tmp_path / "t.jsonl", tmp_path / "s.jsonl"
    res = runner.invoke(
        app, ["ingest", str(logs), "--out", str(t), "--outcome-field", "is_correct"]
    )
    assert res.exit_code == 0, res.output
    res = runner.invoke(app, ["grade", "--in", str(t), "--out", str(s), "--reward", "outcome"])
    assert res.exit_code == 0, res.output
    rows = [orjson.loads(x) for x in s.read_text().splitlines()]
    assert len(rows) == 4  # was 0 graded, 4 missing_context
    assert sorted(r["passed"] for r in rows) == [False, False, True, True]
    assert {r["transcript"]["conversation_id"] for r in rows} == {"c0", "c1", "c2", "c3"}
    status = tmp_path / "st.jsonl"
    status.write_text(orjson.dumps(_rec(9, status="escalated")).decode() + "\n")
    res = runner.invoke(
        app,
        ["ingest", str(status), "--out", str(t), "--outcome-field", "status",
         "--outcome-values", "resolved=1,escalated=0"],
    )  # fmt: skip
    assert res.exit_code == 0, res.output
    assert '"value":0.0' in t.read_text()
    bad = runner.invoke(app, ["ingest", str(status), "--out", str(t), "--outcome-values", "x=7"])
    assert bad.exit_code == 2 and "NAME=SCORE" in bad.output
