"""The CLI end to end: every stage over files, on hand-computable data."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from rlstream.curation import verify_dataset
from rlstream.formats import to_format
from rlstream.services.cli.main import app
from rlstream.transcript import Message, ToolCall, Transcript

pytestmark = pytest.mark.unit
runner = CliRunner()

#: task -> (n, passes): hand-computed profile below
GROUPS = {"A": (4, 2), "B": (4, 1), "C": (4, 4), "D": (1, 1)}


def _maths_transcripts() -> list[Transcript]:
    out = []
    for task, (n, passes) in GROUPS.items():
        for i in range(n):
            answer = 18 if i < passes else 17
            out.append(
                Transcript(
                    conversation_id=f"{task}-{i}",
                    agent="math-tutor",
                    label="#### 18",
                    metadata={"task_id": task},
                    messages=(
                        Message(role="user", content=f"Task {task}: what is 9 times 2? (try {i})"),
                        Message(role="assistant", content=f"9 x 2 ... the answer is {answer}."),
                    ),
                )
            )
    return out


def _write(path: Path, fmt: str, transcripts: list[Transcript]) -> Path:
    path.write_text("".join(json.dumps(to_format(t, fmt)) + "\n" for t in transcripts))
    return path


def _invoke(*args: str) -> str:
    result = runner.invoke(app, list(args))
    assert result.exit_code == 0, result.output
    return result.output


@pytest.mark.parametrize("fmt", ["openai", "anthropic", "sharegpt", "langchain", "otel"])
def test_improve_run_profile_matches_hand_computed_values(tmp_path: Path, fmt: str) -> None:
    logs = _write(tmp_path / f"{fmt}.jsonl", fmt, _maths_transcripts())
    _invoke(
        "improve", "run", "--input", str(logs), "--reward", "gsm8k", "--output", str(tmp_path / "o")
    )
    p = json.loads((tmp_path / "o" / "profile.json").read_text())
    assert (p["rollouts"], p["groups"], p["graded_groups"]) == (13, 4, 3)
    assert (p["mixed_groups"], p["singletons"]) == (2, 1)
    # support: A p=.5 -> 1, B p=.25 -> .75, C p=1 -> 0 ; unbiased x n/(n-1) = 4/3
    assert p["gradient_support"] == pytest.approx(1.75 / 3)
    assert p["gradient_support_unbiased"] == pytest.approx(1.75 / 3 * 4 / 3)
    assert p["pass_at_1"] == pytest.approx((0.5 + 0.25 + 1 + 1) / 4)
    # pass@2 over groups with n >= 2: A 1-1/6, B 1-3/6, C 1
    assert p["pass_at_k"]["2"] == pytest.approx((5 / 6 + 0.5 + 1) / 3)
    assert p["pass_at_k"]["4"] == pytest.approx(1.0)
    assert p["verdict"] == "trains"
    scored = [json.loads(line) for line in (tmp_path / "o" / "scored.jsonl").open()]
    truth = {f"{t}-{i}": i < c for t, (n, c) in GROUPS.items() for i in range(n)}
    assert {s["transcript"]["conversation_id"]: s["passed"] for s in scored} == truth


def test_stages_one_by_one_and_tool_calls_survive_ingest(tmp_path: Path) -> None:
    call = ToolCall(id="call_9", name="lookup_order", arguments={"order_id": "A-77", "n": 2})
    t = Transcript(
        conversation_id="c1",
        messages=(
            Message(role="system", content="You are a support agent."),
            Message(role="user", content="Where is my order? mail me at jane.doe@example.com"),
            Message(role="assistant", tool_calls=(call,)),
            Message(
                role="tool",
                tool_call_id="call_9",
                name="lookup_order",
                content='{"status": "shipped"}',
            ),
            Message(role="assistant", content="It has shipped."),
        ),
    )
    logs = tmp_path / "in.jsonl"
    logs.write_text(json.dumps(to_format(t, "openai")) + "\n" + "{not json\n")
    _invoke("ingest", str(logs), "--out", str(tmp_path / "t.jsonl"))
    [got] = [json.loads(x) for x in (tmp_path / "t.jsonl").open()]
    calls = [c for m in got["messages"] for c in m["tool_calls"]]
    assert calls[0]["id"] == "call_9" and calls[0]["name"] == "lookup_order"
    assert calls[0]["arguments"] == {"order_id": "A-77", "n": 2}
    assert got["messages"][3]["tool_call_id"] == "call_9"
    assert "jane.doe@example.com" not in json.dumps(got) and "<EMAIL_1>" in json.dumps(got)
    [reject] = [json.loads(x) for x in (tmp_path / "t.jsonl.rejects.jsonl").open()]
    assert reject["source"]["line"] == 2 and reject["error_code"] == "parse_error"


def test_max_rejects_fails_the_run(tmp_path: Path) -> None:
    logs = tmp_path / "bad.jsonl"
    logs.write_text("{not json\n[1, 2]\n")
    result = runner.invoke(
        app, ["ingest", str(logs), "--out", str(tmp_path / "t.jsonl"), "--max-rejects", "0"]
    )
    assert result.exit_code == 1
    assert "rejected" in result.output


def test_grade_without_label_reports_missing_context(tmp_path: Path) -> None:
    t = _maths_transcripts()[0].with_updates(label=None)
    (tmp_path / "t.jsonl").write_text(t.model_dump_json() + "\n")
    out = _invoke(
        "grade",
        "--in",
        str(tmp_path / "t.jsonl"),
        "--out",
        str(tmp_path / "s.jsonl"),
        "--reward",
        "gsm8k",
    )
    assert "missing_context: 1" in out
    assert (tmp_path / "s.jsonl").read_text() == ""


def test_unknown_reward_is_a_usage_error(tmp_path: Path) -> None:
    (tmp_path / "t.jsonl").write_text("")
    result = runner.invoke(
        app,
        [
            "grade",
            "--in",
            str(tmp_path / "t.jsonl"),
            "--out",
            str(tmp_path / "s"),
            "--reward",
            "nope",
        ],
    )
    assert result.exit_code == 2
    assert "gsm8k" in result.output  # the message lists what is available


def test_quick_demo_is_reproducible(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    # lineage records source paths as given, so run both from the same relative path
    for name in ("a", "b"):
        (tmp_path / name).mkdir()
        monkeypatch.chdir(tmp_path / name)
        _invoke("demo", "--quick", "--dir", "demo")
    a, b = (tmp_path / n / "demo" / "out" / "dataset" for n in ("a", "b"))
    manifest = verify_dataset(a)
    assert manifest.counts
    for f in sorted(a.iterdir()):
        assert f.read_bytes() == (b / f.name).read_bytes(), f.name
    profile = json.loads((tmp_path / "a" / "demo" / "out" / "profile.json").read_text())
    for key in (
        "rollouts",
        "groups",
        "graded_groups",
        "mixed_groups",
        "singletons",
        "gradient_support",
        "gradient_support_unbiased",
        "pass_at_1",
        "pass_at_k",
        "headroom",
        "verdict",
    ):
        assert key in profile


def test_help_lists_every_stage() -> None:
    out = _invoke("--help")
    for cmd in (
        "ingest",
        "grade",
        "profile",
        "curate",
        "improve",
        "demo",
        "eval",
        "db",
        "services",
    ):
        assert cmd in out
