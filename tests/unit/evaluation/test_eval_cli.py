"""``rlstream eval`` refuses leaked prompts and bad input with one line, before any model loads."""

from __future__ import annotations

from pathlib import Path

import orjson
from eval_helpers import orders_dataset
from typer.testing import CliRunner

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
