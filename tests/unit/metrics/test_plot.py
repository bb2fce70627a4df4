"""The profile SVG: valid XML, bars proportional to the histogram, one point per k."""

from __future__ import annotations

import xml.etree.ElementTree as ET

import pytest

from rlstream.metrics import RolloutRow, profile_rows
from rlstream.metrics.plot import profile_svg

pytestmark = pytest.mark.unit
NS = "{http://www.w3.org/2000/svg}"


def _rows() -> list[RolloutRow]:
    rows = []
    for g, passes in enumerate([0, 1, 2, 2, 3, 4]):
        for i in range(4):
            ok = i < passes
            rows.append(RolloutRow(f"{g}-{i}", f"t{g}", float(ok), ok, {}))
    return rows


def test_svg_draws_histogram_and_curves() -> None:
    p = profile_rows(_rows(), hack_scan=False)
    root = ET.fromstring(profile_svg(p))
    bars = [r for r in root.iter(f"{NS}rect") if r.find(f"{NS}title") is not None]
    assert len(bars) == 10
    heights = [float(b.get("height", 0)) for b in bars]
    counts = list(p.histogram.counts)
    tallest = max(counts)
    assert heights == pytest.approx([190 * c / tallest for c in counts])
    curves = list(root.iter(f"{NS}polyline"))
    assert len(curves) == 2
    assert all(len(c.get("points", "").split()) == len(p.pass_at_k) for c in curves)
    assert "verdict: " + p.verdict in ET.tostring(root, encoding="unicode")
