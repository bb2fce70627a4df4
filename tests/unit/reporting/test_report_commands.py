"""``rlstream eval`` and ``rlstream demo`` write the run page and print its path (the demo's
is its last line), whatever the gate decided. The models are scripted: the commands' own
code runs, the sampling and training do not."""

from __future__ import annotations

from pathlib import Path

import orjson
import pytest
from report_world import evaluation_report, make_run_folder
from typer.testing import CliRunner

from rlstream.evaluation import GateDecision
from rlstream.services.cli import eval_cmd
from rlstream.services.cli.main import app

pytestmark = pytest.mark.unit


@pytest.fixture(scope="module")
def run_folder(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return make_run_folder(tmp_path_factory.mktemp("cmds"))


def test_eval_writes_the_page(
    run_folder: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(eval_cmd, "run_evaluation", lambda *a, **k: evaluation_report())
    out = tmp_path / "eval"
    res = CliRunner().invoke(
        app,
        [
            "eval", "--baseline", str(tmp_path / "base"),
            "--candidate-adapter", str(tmp_path / "adapter"),
            "--heldout", str(run_folder / "dataset" / "heldout.jsonl"),
            "--reward", "tool_calling", "--out", str(out),
        ],
    )  # fmt: skip
    assert res.exit_code == 0, res.output
    page = out / "report.html"
    assert f"report page → {page}" in res.output.replace("\n", "")
    html = page.read_text()
    assert 'class="banner promote"' in html
    assert html.count("not in this run folder") == 5  # eval folders hold only the gate


def test_demo_ends_by_printing_the_page(run_folder: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    import rlstream.pipeline as pipeline
    from rlstream.pipeline import DemoResult

    data = orjson.loads((run_folder / "report.json").read_bytes())
    result = DemoResult(
        report=data,
        decision=GateDecision(decision=data["decision"], reasons=tuple(data["reasons"])),
        model_id=data["model_id"],
        out_dir=run_folder,
        stage_seconds={"train": 1.0},
    )
    monkeypatch.setattr(pipeline, "run_demo", lambda cfg, stages: result)
    res = CliRunner().invoke(app, ["demo", "--dir", str(run_folder.parent)])
    assert res.exit_code == 0, res.output
    last = res.output.strip().replace("\n", "").rsplit("the whole story on one page: ", 1)[1]
    assert Path(last) == (run_folder / "report.html").resolve()
    assert "Gate decision: promote" in Path(last).read_text()
