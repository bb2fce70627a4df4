"""User errors reach the user as one line and a non-zero exit, never a traceback;
the README's first usage command runs as written."""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import orjson
import pytest
from typer.testing import CliRunner

from rlstream.ingest import Reject, ingest_paths
from rlstream.rewards.registry import available_rewards
from rlstream.services.cli.main import app

pytestmark = pytest.mark.unit
ROOT = Path(__file__).resolve().parents[3]
RLSTREAM = Path(sys.executable).with_name("rlstream")


def _rec(i: int, answer: str = "Done.") -> dict[str, object]:
    return {
        "id": f"c{i}",
        "metadata": {"task_id": "t"},
        "outcome": {"resolved": i % 2 == 0},
        "messages": [
            {"role": "user", "content": f"question {i}"},
            {"role": "assistant", "content": answer},
        ],
    }


def _logs(tmp_path: Path) -> Path:
    p = tmp_path / "logs.jsonl"
    p.write_text("".join(orjson.dumps(_rec(i)).decode() + "\n" for i in range(3)))
    return p


def _cli(*args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    """The installed console script, as a user runs it (errors are printed by run())."""
    return subprocess.run(
        [str(RLSTREAM), *args],
        capture_output=True,
        text=True,
        cwd=cwd,
        timeout=120,
        check=False,
        env={**os.environ, "COLUMNS": "200"},
    )


def _one_line_error(res: subprocess.CompletedProcess[str], *needles: str) -> None:
    assert res.returncode not in (0, None), res.stderr
    assert "Traceback" not in res.stderr, res.stderr
    lines = [ln for ln in res.stderr.splitlines() if ln.startswith("error")]
    assert len(lines) == 1, res.stderr
    for n in needles:
        assert n in lines[0], lines[0]


def test_file_system_errors_are_one_line(tmp_path: Path) -> None:
    logs = _logs(tmp_path)
    (tmp_path / "afile").write_text("x")
    scored = tmp_path / "s.jsonl"
    _one_line_error(
        _cli("ingest", str(logs), "--out", "afile/x.jsonl", cwd=tmp_path), "afile", "folder"
    )
    if sys.platform.startswith("linux"):  # /sys refuses new files even to root
        _one_line_error(
            _cli("ingest", str(logs), "--out", "/sys/x.jsonl", cwd=tmp_path), "Permission denied"
        )
    assert _cli("ingest", str(logs), "--out", "t.jsonl", cwd=tmp_path).returncode == 0
    res = _cli(
        "grade", "--in", "t.jsonl", "--out", str(scored), "--reward", "outcome", cwd=tmp_path
    )
    assert res.returncode == 0, res.stderr
    _one_line_error(_cli("curate", "--in", str(scored), "--out", "afile", cwd=tmp_path), "afile")
    _one_line_error(
        _cli("profile", "--in", str(scored), "--svg", "afile/p.svg", cwd=tmp_path), "afile"
    )
    binary = tmp_path / "ls.bin"
    shutil.copy(sys.executable, binary)
    _one_line_error(
        _cli("grade", "--in", str(binary), "--out", "s2.jsonl", "--reward", "gsm8k", cwd=tmp_path),
        "not UTF-8",
    )


def test_debug_shows_the_traceback(tmp_path: Path) -> None:
    (tmp_path / "afile").write_text("x")
    res = _cli("--debug", "ingest", str(_logs(tmp_path)), "--out", "afile/x.jsonl", cwd=tmp_path)
    assert res.returncode != 0 and "Traceback" in res.stderr


@pytest.mark.parametrize("content", ["", "  \n\n \t\n"])
def test_empty_input_says_it_is_empty(tmp_path: Path, content: str) -> None:
    empty = tmp_path / "empty.jsonl"
    empty.write_text(content)
    _one_line_error(_cli("ingest", str(empty), "--out", "t.jsonl", cwd=tmp_path), "empty")
    for cmd in (
        ["grade", "--out", "s.jsonl", "--reward", "gsm8k"],
        ["profile"],
        ["curate", "--out", "d"],
    ):
        _one_line_error(_cli(cmd[0], "--in", str(empty), *cmd[1:], cwd=tmp_path), "empty")


def test_duplicate_id_with_different_content_goes_to_rejects(tmp_path: Path) -> None:
    p = tmp_path / "dup.jsonl"
    rows = [_rec(1), _rec(1), _rec(1, answer="Something else entirely."), _rec(2)]
    p.write_text("".join(orjson.dumps(r).decode() + "\n" for r in rows))
    run = ingest_paths([p])
    out = list(run)
    rejects = [r for r in out if isinstance(r, Reject)]
    assert [(r.error_code, r.source.line) for r in rejects] == [("duplicate_id_conflict", 3)]
    assert "'c1'" in rejects[0].reason
    assert run.summary.duplicates == 1 and run.summary.ok == 2


def test_k_max_zero_is_refused(tmp_path: Path) -> None:
    res = CliRunner().invoke(app, ["profile", "--in", str(_logs(tmp_path)), "--k-max", "0"])
    assert res.exit_code == 2 and "k-max" in res.output


def test_help_shows_whole_option_names_at_80_columns_and_grade_lists_rewards() -> None:
    runner = CliRunner()
    env = {"COLUMNS": "80", "TERMINAL_WIDTH": "80"}
    for cmd in (["improve", "run"], ["ingest"], ["grade"], ["curate"], ["profile"]):
        res = runner.invoke(app, [*cmd, "--help"], env=env, terminal_width=80)
        assert res.exit_code == 0
        names = re.findall(r"(--[a-z][a-z-]*…?)", res.output)
        assert names and not [n for n in names if n.endswith("…")], (cmd, res.output)
    grade_help = runner.invoke(app, ["grade", "--help"], env=env, terminal_width=80).output
    flat = " ".join(grade_help.replace("│", " ").split())
    for name in available_rewards():
        assert name in flat, name


def test_readme_first_usage_command_runs_as_written(tmp_path: Path) -> None:
    readme = (ROOT / "README.md").read_text()
    usage = readme[readme.index("## Using it") :]
    cmd = next(ln for ln in usage.splitlines() if ln.startswith("rlstream "))
    assert "--input logs/*.jsonl" in cmd
    logs = tmp_path / "logs"
    logs.mkdir()
    for i in range(3):  # several files, so the shell expands the glob into several paths
        (logs / f"part{i}.jsonl").write_text(
            "".join(orjson.dumps(_rec(10 * i + j)).decode() + "\n" for j in range(2))
        )
    cmd = cmd.split("#")[0].replace("rlstream ", f"{RLSTREAM} ", 1)
    res = subprocess.run(
        ["bash", "-c", cmd], cwd=tmp_path, capture_output=True, text=True, timeout=300, check=False
    )
    assert res.returncode == 0, res.stderr
    assert (tmp_path / "out" / "transcripts.jsonl").read_text().count("\n") == 6
    assert "pip install rlstream" not in readme.replace("pip install rlstream-", "")
