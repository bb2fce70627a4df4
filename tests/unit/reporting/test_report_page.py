"""The run page (rlstream.reporting) and ``rlstream report``: every section drawn from the
run's own files, the same numbers as the terminal tables, self-contained, and user text inert."""

from __future__ import annotations

import base64
import hashlib
import re
from pathlib import Path

import orjson
import pytest
from report_world import HOSTILE, REASON, make_run_folder
from typer.testing import CliRunner

from rlstream.errors import ConfigError
from rlstream.evaluation.report import metric_rows
from rlstream.reporting import load_story, render_html, story_tables, write_html_report
from rlstream.reporting.page import BANNER
from rlstream.services.cli.main import app

pytestmark = pytest.mark.unit


@pytest.fixture(scope="module")
def run_folder(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return make_run_folder(tmp_path_factory.mktemp("run"))


def test_every_section_is_filled_from_the_folder(run_folder: Path) -> None:
    html = render_html(load_story(run_folder))
    for anchor in ("came-in", "signal", "curation", "training", "gate", "lineage"):
        assert f'<section id="{anchor}">' in html
    assert "not in this run folder" not in html
    assert 'class="banner promote"' in html and "Gate decision: promote" in html
    assert html.count("data:image/svg+xml;base64,") == 5  # profile, curve, 3 evaluation plots
    assert "exact_duplicate" in html  # a drop reason from the manifest


def test_numbers_are_the_reports_and_the_terminals(run_folder: Path) -> None:
    """The page prints report.json's figures, and `rlstream report` the same cells."""
    data = orjson.loads((run_folder / "report.json").read_bytes())
    html = render_html(load_story(run_folder))
    for name, base, cand in metric_rows(data):
        assert f"<td>{name}</td><td class=n>{base:.3f}</td><td class=n>{cand:.3f}</td>" in html
    res = CliRunner().invoke(app, ["report", str(run_folder), "--out", str(run_folder / "p.html")])
    assert res.exit_code == 0, res.output
    tables = story_tables(load_story(run_folder))
    for key in ("ingest", "profile", "curation", "drops", "training", "gate"):
        for row in tables[key].rows:
            for cell in row:
                assert cell.split()[0] in res.stdout, (key, cell)
    assert "gate decision: promote" in res.output
    assert (run_folder / "p.html").read_text() == html


def test_user_text_is_inert(run_folder: Path) -> None:
    html = render_html(load_story(run_folder))
    assert "<script" not in html.lower()
    assert "&lt;script&gt;alert(1)&lt;/script&gt;" in html
    assert REASON.replace("<", "&lt;").replace(">", "&gt;") in html
    assert HOSTILE not in html


def test_self_contained_and_locked_down(run_folder: Path) -> None:
    html = render_html(load_story(run_folder))
    assert "http://" not in html and "https://" not in html
    assert all(s.startswith("data:") for s in re.findall(r'src="([^"]*)"', html))
    csp = re.search(r'http-equiv="Content-Security-Policy" content="([^"]*)"', html)
    assert csp is not None
    policy = csp.group(1).replace("&#x27;", "'")
    assert "default-src 'none'" in policy and "script-src" not in policy
    style = re.search(r"<style>(.*?)</style>", html, re.S)
    assert style is not None
    digest = base64.b64encode(hashlib.sha256(style.group(1).encode()).digest()).decode()
    assert f"'sha256-{digest}'" in policy
    assert ' style="' not in html  # inline style attributes would be refused by the policy
    for colour in BANNER.values():
        assert colour in style.group(1)


def test_lineage_links_reach_conversation_ids(run_folder: Path) -> None:
    html = render_html(load_story(run_folder))
    link = re.search(r'<a href="#(conv-\d+)"><code>conv-&lt;script', html)
    assert link is not None and f'<tr id="{link.group(1)}">' in html
    assert "logs/orders.jsonl:1" in html


def test_a_batch_folder_has_no_gate(run_folder: Path, tmp_path: Path) -> None:
    part = tmp_path / "batch"
    part.mkdir()
    for name in ("ingest.json",):
        (part / name).write_bytes((run_folder / name).read_bytes())
    html = render_html(load_story(part))
    assert html.count("not in this run folder") == 5
    assert "banner" not in html.split("<body>")[1]


def test_not_a_run_folder(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match="not a finished run folder"):
        load_story(tmp_path)
    res = CliRunner().invoke(app, ["report", str(tmp_path / "nope")])
    assert res.exit_code != 0
    assert "not a run folder" in res.output and "Traceback" not in res.output


def test_improve_run_writes_the_page(tmp_path: Path) -> None:
    from rlstream.sampledata.orders import write_order_logs

    logs = tmp_path / "orders.jsonl"
    write_order_logs(logs, seed=5, n_tasks=40, rollouts=3)
    out = tmp_path / "out"
    res = CliRunner().invoke(
        app,
        ["improve", "run", "--input", str(logs), "--reward", "tool_calling", "--output", str(out)],
    )
    assert res.exit_code == 0, res.output
    assert f"report page → {out / 'report.html'}" in res.output.replace("\n", "")
    html = (out / "report.html").read_text()
    assert (
        "profile" in html and "What came in" in html and html.count("not in this run folder") == 3
    )
    assert write_html_report(out) == out / "report.html"
