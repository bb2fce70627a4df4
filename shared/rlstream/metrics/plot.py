"""A profile as a self-contained SVG: the two pictures people look at before reading numbers.

Left: how group pass rates spread (mixed groups in the curation band are where RL learns).
Right: pass@k and pass^k against k (the gap between them is the headroom). No plotting
library: the SVG is written directly so the CLI has no heavy dependency.
"""

from __future__ import annotations

from html import escape

from rlstream.metrics.models import Profile

W, H = 760, 300
PANEL_W, PANEL_H = 300, 190
TOP = 60
LEFT_X, RIGHT_X = 60, 430
BAND_COLOUR, BAR_COLOUR = "#e8f3e8", "#4c78a8"
AT_COLOUR, HAT_COLOUR = "#e45756", "#72b7b2"


def _text(x: float, y: float, s: str, size: int = 11, anchor: str = "middle") -> str:
    return (
        f'<text x="{x:.1f}" y="{y:.1f}" font-size="{size}" text-anchor="{anchor}" '
        f'font-family="sans-serif">{escape(s)}</text>'
    )


def _axes(x0: float, title: str, xlabel: str, ylabel: str) -> list[str]:
    y1 = TOP + PANEL_H
    return [
        f'<line x1="{x0}" y1="{y1}" x2="{x0 + PANEL_W}" y2="{y1}" stroke="#333"/>',
        f'<line x1="{x0}" y1="{TOP}" x2="{x0}" y2="{y1}" stroke="#333"/>',
        _text(x0 + PANEL_W / 2, TOP - 14, title, 13),
        _text(x0 + PANEL_W / 2, y1 + 32, xlabel),
        f'<g transform="translate({x0 - 38},{TOP + PANEL_H / 2}) rotate(-90)">'
        + _text(0, 0, ylabel)
        + "</g>",
    ]


def _histogram(p: Profile, band: tuple[float, float]) -> list[str]:
    out = _axes(LEFT_X, "group pass rate (n ≥ 2)", "pass rate", "groups")
    counts = p.histogram.counts
    top = max(counts) if counts and max(counts) > 0 else 1
    bx0 = LEFT_X + band[0] * PANEL_W
    out.insert(
        0,
        f'<rect x="{bx0:.1f}" y="{TOP}" width="{(band[1] - band[0]) * PANEL_W:.1f}" '
        f'height="{PANEL_H}" fill="{BAND_COLOUR}"/>',
    )
    bw = PANEL_W / max(len(counts), 1)
    for i, c in enumerate(counts):
        h = PANEL_H * c / top
        x = LEFT_X + i * bw
        out.append(
            f'<rect x="{x + 2:.1f}" y="{TOP + PANEL_H - h:.1f}" width="{bw - 4:.1f}" '
            f'height="{h:.1f}" fill="{BAR_COLOUR}"><title>{c} groups</title></rect>'
        )
    for i in range(0, 11, 2):
        out.append(_text(LEFT_X + i * PANEL_W / 10, TOP + PANEL_H + 14, f"{i / 10:g}", 10))
    out.append(_text(LEFT_X - 8, TOP + 4, str(top), 10, "end"))
    return out


def _curve(points: dict[str, float], k_top: int, colour: str) -> str:
    coords = []
    for k_s, v in sorted(points.items(), key=lambda kv: int(kv[0])):
        k = int(k_s)
        x = RIGHT_X + (PANEL_W * (k - 1) / max(k_top - 1, 1))
        coords.append(f"{x:.1f},{TOP + PANEL_H * (1 - v):.1f}")
    return f'<polyline points="{" ".join(coords)}" fill="none" stroke="{colour}" stroke-width="2"/>'


def _pass_curves(p: Profile) -> list[str]:
    out = _axes(RIGHT_X, "pass@k and pass^k", "k", "rate")
    if p.pass_at_k:
        k_top = max(int(k) for k in p.pass_at_k)
        out.append(_curve(p.pass_at_k, k_top, AT_COLOUR))
        out.append(_curve(p.pass_hat_k, k_top, HAT_COLOUR))
        out.append(_text(RIGHT_X, TOP + PANEL_H + 14, "1", 10))
        out.append(_text(RIGHT_X + PANEL_W, TOP + PANEL_H + 14, str(k_top), 10))
        # each point averages only the groups with n >= k: say how many, at both ends
        g1, gk = p.pass_at_k_groups.get("1"), p.pass_at_k_groups.get(str(k_top))
        if g1 is not None and gk is not None:
            out.append(_text(RIGHT_X, TOP + PANEL_H + 26, f"{g1} groups", 9))
            out.append(_text(RIGHT_X + PANEL_W, TOP + PANEL_H + 26, f"{gk} groups", 9, "end"))
    out.append(_text(RIGHT_X - 8, TOP + 4, "1", 10, "end"))
    out.append(_text(RIGHT_X - 8, TOP + PANEL_H, "0", 10, "end"))
    # legend bottom-left: pass^k starts at pass@1 and falls, pass@k rises; that corner is free
    lx, ly = RIGHT_X + 12, TOP + PANEL_H - 40
    out.append(
        f'<line x1="{lx}" y1="{ly}" x2="{lx + 16}" y2="{ly}" stroke="{AT_COLOUR}" stroke-width="2"/>'
    )
    out.append(_text(lx + 20, ly + 4, "pass@k", 10, "start"))
    out.append(
        f'<line x1="{lx}" y1="{ly + 16}" x2="{lx + 16}" y2="{ly + 16}" stroke="{HAT_COLOUR}" stroke-width="2"/>'
    )
    out.append(_text(lx + 20, ly + 20, "pass^k", 10, "start"))
    return out


def _fmt(v: float | None) -> str:
    return "n/a" if v is None else f"{v:.3f}"


def profile_svg(p: Profile, band: tuple[float, float] = (0.2, 0.8)) -> str:
    """The profile's histogram and pass@k / pass^k curves as one SVG document."""
    headline = (
        f"support {_fmt(p.gradient_support)} (unbiased {_fmt(p.gradient_support_unbiased)}) · "
        f"pass@1 {_fmt(p.pass_at_1)} · headroom {_fmt(p.headroom)} · "
        f"{p.graded_groups} graded groups · verdict: {p.verdict}"
    )
    parts = [
        f'<svg xmlns="http://www.w3.org/2000/svg" width="{W}" height="{H}" viewBox="0 0 {W} {H}">',
        f'<rect width="{W}" height="{H}" fill="white"/>',
        _text(W / 2, 20, headline, 12),
        *_histogram(p, band),
        *_pass_curves(p),
        "</svg>",
    ]
    return "\n".join(parts) + "\n"
