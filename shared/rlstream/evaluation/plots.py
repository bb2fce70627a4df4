"""The report's pictures as self-contained SVG (no plotting library, like metrics/plot.py).

pass@k curves before and after, the per-prompt difference histogram, and the reward
distributions of both models.
"""

from __future__ import annotations

from collections.abc import Sequence
from html import escape

from rlstream.evaluation.models import EvaluationReport, Metric

W, H = 460, 300
X0, Y0, PW, PH = 60, 50, 360, 190
BASE, CAND = "#4c78a8", "#e45756"


def _text(x: float, y: float, s: str, size: int = 11, anchor: str = "middle") -> str:
    return (
        f'<text x="{x:.1f}" y="{y:.1f}" font-size="{size}" text-anchor="{anchor}" '
        f'font-family="sans-serif">{escape(s)}</text>'
    )


def _frame(title: str, xlabel: str, ylabel: str, body: list[str], legend: bool = True) -> str:
    y1 = Y0 + PH
    parts = [
        f'<svg xmlns="http://www.w3.org/2000/svg" width="{W}" height="{H}" '
        f'viewBox="0 0 {W} {H}"><rect width="100%" height="100%" fill="white"/>',
        f'<line x1="{X0}" y1="{y1}" x2="{X0 + PW}" y2="{y1}" stroke="#333"/>',
        f'<line x1="{X0}" y1="{Y0}" x2="{X0}" y2="{y1}" stroke="#333"/>',
        _text(X0 + PW / 2, Y0 - 20, title, 13),
        _text(X0 + PW / 2, y1 + 34, xlabel),
        f'<g transform="translate({X0 - 40},{Y0 + PH / 2}) rotate(-90)">{_text(0, 0, ylabel)}</g>',
        *body,
    ]
    if legend:
        parts += [
            f'<rect x="{X0 + PW - 150}" y="{Y0 - 8}" width="10" height="10" fill="{BASE}"/>',
            _text(X0 + PW - 135, Y0 + 1, "baseline", 10, "start"),
            f'<rect x="{X0 + PW - 75}" y="{Y0 - 8}" width="10" height="10" fill="{CAND}"/>',
            _text(X0 + PW - 60, Y0 + 1, "candidate", 10, "start"),
        ]
    return "\n".join([*parts, "</svg>"]) + "\n"


def _y(v: float, top: float) -> float:
    return Y0 + PH - (v / top if top > 0 else 0.0) * PH


def _y_ticks(top: float, fmt: str = "{:.1f}") -> list[str]:
    return [
        _text(X0 - 6, _y(top * f, top) + 4, fmt.format(top * f), 10, "end") for f in (0.0, 0.5, 1.0)
    ]


def passk_svg(report: EvaluationReport) -> str:
    """pass@k against k for both models (one point at k=1 when greedy)."""
    body = _y_ticks(1.0)
    k_top = max(len(report.baseline.pass_at_k), 1)
    for summary, colour in ((report.baseline, BASE), (report.candidate, CAND)):
        pts = [
            (X0 + (PW * (k - 1) / (k_top - 1) if k_top > 1 else PW / 2), _y(v, 1.0))
            for k, v in sorted(summary.pass_at_k.items())
        ]
        if len(pts) > 1:
            path = " ".join(f"{x:.1f},{y:.1f}" for x, y in pts)
            body.append(
                f'<polyline points="{path}" fill="none" stroke="{colour}" stroke-width="2"/>'
            )
        body += [f'<circle cx="{x:.1f}" cy="{y:.1f}" r="3" fill="{colour}"/>' for x, y in pts]
    for k in range(1, k_top + 1):
        x = X0 + (PW * (k - 1) / (k_top - 1) if k_top > 1 else PW / 2)
        body.append(_text(x, Y0 + PH + 16, str(k), 10))
    return _frame("pass@k on held-out prompts", "k", "pass@k", body)


def _bars(
    series: Sequence[tuple[Sequence[int], str]], edges: Sequence[float], fmt: str
) -> list[str]:
    top = max((max(c) for c, _ in series if c), default=1) or 1
    n = len(edges) - 1
    slot = PW / n
    width = slot / (len(series) + 0.5)
    body = _y_ticks(float(top), "{:.0f}")
    for s, (counts, colour) in enumerate(series):
        for i, c in enumerate(counts):
            x = X0 + i * slot + 0.25 * width + s * width
            body.append(
                f'<rect x="{x:.1f}" y="{_y(c, top):.1f}" width="{width:.1f}" '
                f'height="{Y0 + PH - _y(c, top):.1f}" fill="{colour}"/>'
            )
    for i in range(0, n + 1, max(1, n // 4)):
        body.append(_text(X0 + i * slot, Y0 + PH + 16, fmt.format(edges[i]), 10))
    return body


def _histogram(values: Sequence[float], edges: Sequence[float]) -> list[int]:
    counts = [0] * (len(edges) - 1)
    for v in values:
        i = next((j for j in range(len(edges) - 1) if v < edges[j + 1]), len(edges) - 2)
        counts[max(0, i)] += 1
    return counts


def diff_svg(report: EvaluationReport, metric: Metric = "pass_at_1") -> str:
    """How the per-prompt paired difference (candidate - baseline) spreads."""
    edges = [-1.0 + 0.2 * i for i in range(11)]
    diffs = [p.diff(metric) for p in report.prompts]
    body = _bars([(_histogram(diffs, edges), CAND)], edges, "{:+.1f}")
    return _frame(
        f"per-prompt difference ({metric})", "candidate - baseline", "prompts", body, False
    )


def rewards_svg(report: EvaluationReport) -> str:
    """Per-sample reward distributions of both models."""
    edges = [0.1 * i for i in range(11)]
    base = [s.score for p in report.prompts for s in p.baseline]
    cand = [s.score for p in report.prompts for s in p.candidate]
    body = _bars(
        [(_histogram(base, edges), BASE), (_histogram(cand, edges), CAND)], edges, "{:.1f}"
    )
    return _frame("reward distribution (all samples)", "reward", "samples", body)
