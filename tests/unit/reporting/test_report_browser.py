"""The run page in a real browser (Debian's headless Chromium; .ci/run installs it): it opens
with no console message at all (a CSP refusal or a script error would print one), and its
screenshot shows the gate banner and the plots drawn, found by their colours in the pixels."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import numpy as np
import pytest
from numpy.typing import NDArray
from png_pixels import count_colour, read_png, rows_with
from report_world import make_run_folder

from rlstream.evaluation.plots import BASE, CAND
from rlstream.metrics.plot import BAND_COLOUR
from rlstream.reporting import write_html_report
from rlstream.reporting.page import BANNER
from rlstream.reporting.plots import CURVE_COLOUR

pytestmark = [
    pytest.mark.unit,
    pytest.mark.skipif(
        shutil.which("chromium") is None, reason="Debian's chromium is not installed"
    ),
]
WIDTH, HEIGHT = 1100, 3200


def chromium(page: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [
            "chromium", "--headless", "--no-sandbox", "--disable-gpu", "--hide-scrollbars",
            "--no-first-run", "--disable-extensions", "--enable-logging=stderr", "--v=0",
            f"--window-size={WIDTH},{HEIGHT}", *args, page.resolve().as_uri(),
        ],
        capture_output=True, text=True, timeout=120, check=False,
    )  # fmt: skip


def console_lines(stderr: str) -> list[str]:
    """Chromium logs each console message (errors, CSP refusals) as an INFO:CONSOLE line."""
    return [line for line in stderr.splitlines() if ":CONSOLE" in line]


@pytest.fixture(scope="module")
def page(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return write_html_report(make_run_folder(tmp_path_factory.mktemp("browser")))


def test_opens_with_no_console_message(page: Path) -> None:
    run = chromium(page, "--dump-dom")
    assert run.returncode == 0, run.stderr[-2000:]
    assert console_lines(run.stderr) == []
    dom = run.stdout
    assert "Gate decision: promote" in dom
    assert "<script" not in dom.lower()  # the hostile text stayed text
    assert "&lt;script&gt;alert(1)&lt;/script&gt;" in dom


def test_the_console_check_sees_errors(tmp_path: Path) -> None:
    """The check above is real: a page that needs a script or the network is caught."""
    html = (
        '<!DOCTYPE html><html><head><meta http-equiv="Content-Security-Policy" '
        "content=\"default-src 'none'\"></head><body><p>x</p><script>1</script>"
        '<img src="http://127.0.0.1:9/x.png"></body></html>'
    )
    bad = tmp_path / "bad.html"
    bad.write_text(html)
    lines = console_lines(chromium(bad, "--dump-dom").stderr)
    assert len(lines) == 2, lines


def _screenshot(page: Path, tmp_path: Path) -> NDArray[np.uint8]:
    shot = tmp_path / "shot.png"
    run = chromium(page, f"--screenshot={shot}")
    assert run.returncode == 0 and shot.is_file(), run.stderr[-2000:]
    assert console_lines(run.stderr) == []
    return read_png(shot)


def test_screenshot_shows_the_decision_and_the_plots(page: Path, tmp_path: Path) -> None:
    px = _screenshot(page, tmp_path)
    banner_rows = rows_with(px, BANNER["promote"])
    assert len(banner_rows) > 30, "no gate banner drawn"
    assert count_colour(px, BANNER["promote"]) > 20_000
    top = int(banner_rows.max())
    below = slice(top, None)
    # the evaluation plots (pass@k before/after, differences, rewards) under the banner
    assert count_colour(px, BASE, below) > 500
    assert count_colour(px, CAND, below) > 500
    # the profile's curation band and the training curve above it
    assert count_colour(px, BAND_COLOUR, slice(0, top)) > 5_000
    assert count_colour(px, CURVE_COLOUR, slice(0, top)) > 200


def test_pixels_come_from_the_drawn_plots(page: Path, tmp_path: Path) -> None:
    """Control: the same page with the images' data broken shows none of the plot colours,
    so the test above saw rendered SVG, not markup."""
    broken = tmp_path / "broken.html"
    broken.write_text(
        page.read_text().replace("data:image/svg+xml;base64,", "data:image/svg+xml;base64,AAAA")
    )
    px = _screenshot(broken, tmp_path)
    for colour in (BASE, CAND, BAND_COLOUR, CURVE_COLOUR):
        assert count_colour(px, colour) == 0, colour
    assert count_colour(px, BANNER["promote"]) > 20_000


def test_a_rejection_is_drawn_in_its_own_colour(tmp_path: Path) -> None:
    page = write_html_report(make_run_folder(tmp_path, decision="reject"))
    px = _screenshot(page, tmp_path)
    assert count_colour(px, BANNER["reject"]) > 20_000
    assert count_colour(px, BANNER["promote"]) == 0
