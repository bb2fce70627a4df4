"""The training curve as a self-contained SVG (like the evaluation's plots: no plotting
library). It draws the per-step points the trainer recorded in metrics.json, nothing more."""

from __future__ import annotations

from html import escape

W, H = 460, 300
X0, Y0, PW, PH = 60, 50, 360, 190
#: distinctive, so the browser test can find the drawn curve in a screenshot
CURVE_COLOUR = "#9467bd"


def _text(x: float, y: float, s: str, size: int = 11, anchor: str = "middle") -> str:
    return (
        f'<text x="{x:.1f}" y="{y:.1f}" font-size="{size}" text-anchor="{anchor}" '
        f'font-family="sans-serif">{escape(s)}</text>'
    )


def curve_svg(curve: list[dict[str, float]], key: str = "loss") -> str | None:
    """``key`` against step; None when the curve has no such points."""
    pts = [(p["step"], p[key]) for p in curve if key in p and "step" in p]
    if not pts:
        return None
    xs, ys = [x for x, _ in pts], [y for _, y in pts]
    x_lo, x_hi = min(xs), max(xs)
    y_lo, y_hi = min(0.0, min(ys)), max(ys) or 1.0

    def sx(x: float) -> float:
        return X0 + (PW * (x - x_lo) / (x_hi - x_lo) if x_hi > x_lo else PW / 2)

    def sy(y: float) -> float:
        return Y0 + PH - PH * (y - y_lo) / ((y_hi - y_lo) or 1.0)

    line = " ".join(f"{sx(x):.1f},{sy(y):.1f}" for x, y in pts)
    y1 = Y0 + PH
    parts = [
        f'<svg xmlns="http://www.w3.org/2000/svg" width="{W}" height="{H}" '
        f'viewBox="0 0 {W} {H}"><rect width="100%" height="100%" fill="white"/>',
        f'<line x1="{X0}" y1="{y1}" x2="{X0 + PW}" y2="{y1}" stroke="#333"/>',
        f'<line x1="{X0}" y1="{Y0}" x2="{X0}" y2="{y1}" stroke="#333"/>',
        _text(X0 + PW / 2, Y0 - 20, f"training {key} per step", 13),
        _text(X0 + PW / 2, y1 + 34, "step"),
        f'<g transform="translate({X0 - 40},{Y0 + PH / 2}) rotate(-90)">{_text(0, 0, key)}</g>',
        _text(X0 - 6, sy(y_lo) + 4, f"{y_lo:.2f}", 10, "end"),
        _text(X0 - 6, sy(y_hi) + 4, f"{y_hi:.2f}", 10, "end"),
        _text(sx(x_lo), y1 + 16, f"{x_lo:.0f}", 10),
        _text(sx(x_hi), y1 + 16, f"{x_hi:.0f}", 10),
        f'<polyline points="{line}" fill="none" stroke="{CURVE_COLOUR}" stroke-width="3"/>',
        *(
            f'<circle cx="{sx(x):.1f}" cy="{sy(y):.1f}" r="3" fill="{CURVE_COLOUR}"/>'
            for x, y in pts
        ),
        "</svg>",
    ]
    return "\n".join(parts) + "\n"
