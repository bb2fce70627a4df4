"""``rlstream eval`` refuses leaked prompts and bad input with one line, before any model loads,
and its exit code tells promote, reject and insufficient apart."""

from __future__ import annotations

from pathlib import Path

import orjson
import pytest
from eval_helpers import orders_dataset, report_from, sample
from typer.testing import CliRunner

from rlstream.services.cli import eval_cmd
from rlstream.services.cli.main import app

runner = CliRunner()


def _eval(*args: str) -> tuple[int, str]:
    res = runner.invoke(app, ["eval", *args])
    return res.exit_code, res.output


def test_a_leaked_heldout_prompt_is_refused_in_one_line(tmp_path: Path) -> None:
    ds = orders_dataset(tmp_path)
    rows = (ds / "heldout.jsonl").read_bytes().splitlines()
    trained = orjson.loads((ds / "sft.jsonl").read_bytes().splitlines()[0])["task_key"]
    leaked = orjson.loads(rows[0]) | {"task_key": trained}
    bad = tmp_path / "leaky.jsonl"
    bad.write_bytes(orjson.dumps(leaked) + b"\n")
    code, out = _eval(
        "--baseline", str(tmp_path / "no-model"),
        "--candidate-adapter", str(tmp_path / "no-adapter"),
        "--heldout", str(bad), "--reward", "tool_calling",
        "--training-dataset", str(ds), "--out", str(tmp_path / "eval"),
    )  # fmt: skip
    assert code == 1 and "heldout_leak" in out and trained in out
    assert "Traceback" not in out and not (tmp_path / "eval").exists()


def test_a_missing_heldout_file_is_a_usage_error(tmp_path: Path) -> None:
    code, out = _eval(
        "--baseline", str(tmp_path),
        "--candidate-adapter", str(tmp_path),
        "--heldout", str(tmp_path / "nope.jsonl"), "--reward", "tool_calling",
    )  # fmt: skip
    assert code == 2 and "held-out file not found" in out


@pytest.mark.parametrize(
    ("n", "won", "code", "decision"),
    [(60, 40, 0, "promote"), (60, 0, 1, "reject"), (5, 5, 4, "insufficient")],
)
def test_the_exit_code_says_promote_reject_or_insufficient(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, n: int, won: int, code: int, decision: str
) -> None:
    """0 promote, 1 reject (EXIT_DATA), 4 insufficient: too few prompts is not a rejection."""
    ds = orders_dataset(tmp_path)
    base = [[sample(False)] for _ in range(n)]
    cand = [[sample(i < won)] for i in range(n)]
    monkeypatch.setattr(eval_cmd, "run_evaluation", lambda *a, **k: report_from(base, cand))
    got, out = _eval(
        "--baseline", str(tmp_path / "base"),
        "--candidate-adapter", str(tmp_path / "adapter"),
        "--heldout", str(ds / "heldout.jsonl"), "--reward", "tool_calling",
        "--out", str(tmp_path / "eval"),
    )  # fmt: skip
    assert got == code, out
    assert decision in out
    assert orjson.loads((tmp_path / "eval" / "report.json").read_bytes())["decision"] == decision


def test_environment_options_are_checked_before_any_model_loads(tmp_path: Path) -> None:
    ds = orders_dataset(tmp_path)
    common = (
        "--baseline", str(tmp_path / "no-model"), "--candidate-adapter", str(tmp_path / "x"),
        "--heldout", str(ds / "heldout.jsonl"), "--reward", "tool_calling",
    )  # fmt: skip
    code, out = _eval(*common, "--environment", "nosuch")
    assert code == 2 and "unknown environment 'nosuch'" in out and "replay" in out
    code, out = _eval(*common, "--environment", "python", "--env-option", "domain")
    assert code == 2 and "expected KEY=VALUE" in out and "Traceback" not in out
    code, out = _eval(*common, "--environment", "python", "--env-option", "domain=no:such")
    assert code == 2 and "domain 'no:such'" in out and "Traceback" not in out


def test_environment_flags_reach_the_request(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    ds = orders_dataset(tmp_path)
    seen = []

    def fake(request: object, progress: object = None) -> object:
        seen.append(request)
        return report_from([[sample(False)]] * 5, [[sample(True)]] * 5)

    monkeypatch.setattr(eval_cmd, "run_evaluation", fake)
    _eval(
        "--baseline", str(tmp_path), "--candidate-adapter", str(tmp_path),
        "--heldout", str(ds / "heldout.jsonl"), "--reward", "tool_calling",
        "--environment", "replay", "--env-option", "logs=a.jsonl",
        "--env-option", "reward=outcome", "--max-turns", "5", "--out", str(tmp_path / "e"),
    )  # fmt: skip
    [request] = seen
    env = request.environment  # type: ignore[attr-defined]
    assert (env.name, env.options, env.max_turns) == (
        "replay", {"logs": "a.jsonl", "reward": "outcome"}, 5,
    )  # fmt: skip
