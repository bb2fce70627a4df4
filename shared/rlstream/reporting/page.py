"""One self-contained HTML page for a run: styles and plots inline, no script, no network.

Every piece of data is escaped (conversation ids, reasons and task keys come from users'
logs); the plots are embedded as ``data:`` images, which a browser never runs code from; a
Content-Security-Policy forbids any script and any fetch, and admits only this page's own
style block (by its hash), so a page that needed the network would show errors, not data.
"""

from __future__ import annotations

import base64
import hashlib
from html import escape
from pathlib import Path
from typing import Any

from rlstream.lineage import source_label
from rlstream.reporting.plots import curve_svg
from rlstream.reporting.story import RunStory, Table, load_story, story_tables

REPORT_FILE = "report.html"
#: the gate banner's background per decision (distinct, so a screenshot test can find it)
BANNER = {"promote": "#1e8e3e", "reject": "#c5221f", "insufficient": "#f29900"}
#: lineage levels drawn open; deeper ones (groups, rollouts, conversations) start folded
OPEN_DEPTH = 3

CSS = (
    """
body{font-family:sans-serif;margin:0 auto;max-width:1100px;padding:0 16px 48px;color:#222}
h1{font-size:22px;margin:18px 0 4px}h2{font-size:18px;border-bottom:1px solid #ddd;
padding-bottom:4px;margin-top:32px}nav a{margin-right:12px}
table{border-collapse:collapse;margin:8px 0;font-size:13px}
td,th{border:1px solid #ddd;padding:3px 8px;text-align:left;vertical-align:top}
th{background:#f4f4f4}td.n{text-align:right;font-variant-numeric:tabular-nums}
table.kv td.n{text-align:left}
.plots{display:flex;flex-wrap:wrap;gap:8px}.plots img{border:1px solid #eee}
.banner{color:#fff;padding:14px 18px;font-size:20px;font-weight:bold;border-radius:6px}
.muted{color:#777}ul.tree{list-style:none;padding-left:18px;font-size:13px}
.kind{display:inline-block;min-width:90px;color:#555}code{font-size:12px}
summary{cursor:pointer}
""".strip()
    + "".join(f".{k}{{background:{v}}}" for k, v in BANNER.items())
)


def _csp() -> str:
    digest = base64.b64encode(hashlib.sha256(CSS.encode()).digest()).decode()
    return (
        f"default-src 'none'; img-src data:; style-src 'sha256-{digest}'; "
        "base-uri 'none'; form-action 'none'"
    )


def _e(x: Any) -> str:
    return escape(str(x), quote=True)


def _img(svg: str | None, alt: str) -> str:
    if not svg:
        return ""
    data = base64.b64encode(svg.encode()).decode()
    return f'<img alt="{_e(alt)}" src="data:image/svg+xml;base64,{data}">'


def _num(cell: str) -> bool:
    return cell.replace(",", "").replace(".", "").lstrip("+-").isdigit()


def table_html(t: Table, title: bool = True) -> str:
    head = "" if not any(t.header) else "<tr>" + "".join(f"<th>{_e(h)}</th>" for h in t.header)
    body = "".join(
        "<tr>" + "".join(f"<td{' class=n' if _num(c) else ''}>{_e(c)}</td>" for c in row) + "</tr>"
        for row in t.rows
    )
    caption = f"<h3>{_e(t.title)}</h3>" if title else ""
    kind = "" if head else ' class="kv"'
    return f"{caption}<table{kind}>{head}{body}</table>"


def _section(anchor: str, title: str, body: str) -> str:
    return f'<section id="{anchor}"><h2>{_e(title)}</h2>{body or _missing()}</section>'


def _missing() -> str:
    return '<p class="muted">not in this run folder</p>'


def _gate(s: RunStory, tables: dict[str, Table]) -> str:
    ev = s.evaluation
    if ev is None:
        return ""
    decision = s.decision or "insufficient"
    cls = decision if decision in BANNER else "insufficient"
    model = f" · model {_e(ev['model_id'])}" if ev.get("model_id") else ""
    d = ev.get("delta") or {}
    p = d.get("p_value")
    delta = (
        f"<p>Paired {_e(d.get('metric'))} gain over {_e(d.get('n_prompts'))} held-out prompts: "
        f"mean {d.get('mean', 0):+.3f}; {_e(d.get('wins'))} better, {_e(d.get('losses'))} "
        f"worse, {_e(d.get('ties'))} equal. Test: {_e(d.get('test'))}, one-sided p = "
        f"{'-' if p is None else f'{p:.3g}'}; {d.get('confidence', 0):.0%} bootstrap "
        f"CI [{d.get('ci_low', 0):+.3f}, {d.get('ci_high', 0):+.3f}] (display only).</p>"
    )
    plots = "".join(
        _img(s.eval_plots.get(n), alt)
        for n, alt in (
            ("passk.svg", "pass@k before and after"),
            ("diff_hist.svg", "per-prompt difference"),
            ("rewards.svg", "reward distributions"),
        )
    )
    prompts = tables["prompts"]
    return (
        f'<div class="banner {cls}" id="decision">Gate decision: {_e(decision)}{model}</div>'
        + "<ul>"
        + "".join(f"<li>{_e(r)}</li>" for r in s.reasons)
        + "</ul>"
        + delta
        + table_html(tables["gate"])
        + f'<div class="plots">{plots}</div>'
        + f"<details><summary>{_e(prompts.title)}: {len(prompts.rows):,} prompts</summary>"
        + table_html(prompts, title=False)
        + "</details>"
    )


def _tree(node: dict[str, Any], depth: int, conv_index: dict[str, int]) -> str:
    kind, ident = str(node.get("kind")), str(node.get("id"))
    details = node.get("details") or {}
    facts = ", ".join(
        f"{k}={v}" for k, v in details.items() if k != "source" and not isinstance(v, dict | list)
    )
    if kind == "conversation" and ident in conv_index:
        label = f'<a href="#conv-{conv_index[ident]}"><code>{_e(ident)}</code></a>'
    else:
        label = f"<code>{_e(ident)}</code>"
    line = f'<span class="kind">{_e(kind)}</span> {label}'
    if details.get("source"):
        line += f' <span class="muted">{_e(details["source"])}</span>'
    if details.get("erasures"):
        line += f" <strong>built from erased data: {_e(details['erasures'])}</strong>"
    if facts:
        line += f' <span class="muted">{_e(facts)}</span>'
    kids = node.get("children") or []
    if not kids:
        return f"<li>{line}</li>"
    inner = "".join(_tree(k, depth + 1, conv_index) for k in kids)
    fold = " open" if depth < OPEN_DEPTH else ""
    return (
        f"<li><details{fold}><summary>{line} "
        f'<span class="muted">({len(kids):,})</span></summary>'
        f'<ul class="tree">{inner}</ul></details></li>'
    )


def _lineage(lineage: dict[str, Any] | None) -> str:
    if not lineage:
        return ""
    convs = list(lineage.get("conversations") or [])
    index = {str(c.get("conversation_id")): i for i, c in enumerate(convs)}
    counts = ", ".join(f"{_e(k)} {v:,}" for k, v in (lineage.get("counts") or {}).items())
    rows = "".join(
        f'<tr id="conv-{i}"><td><code>{_e(c.get("conversation_id"))}</code></td>'
        f"<td>{_e(source_label(c))}</td></tr>"
        for i, c in enumerate(convs)
    )
    return (
        f"<p>{counts}</p>"
        + f'<ul class="tree">{_tree(lineage.get("root") or {}, 0, index)}</ul>'
        + f"<details><summary>conversations and their sources ({len(convs):,})</summary>"
        + f"<table><tr><th>conversation</th><th>source</th></tr>{rows}</table></details>"
    )


def render_html(s: RunStory) -> str:
    """The whole page as one string."""
    t = story_tables(s)

    def tab(key: str) -> str:
        return table_html(t[key], title=False) if key in t else ""

    curve = curve_svg(s.curve)
    served = table_html(t["served"]) if "served" in t else ""
    cycles = (
        [("cycles", "The loop, cycle by cycle", tab("cycles") + served)] if "cycles" in t else []
    )
    sections = [
        *cycles,
        ("came-in", "What came in", tab("ingest")),
        ("signal", "Where the signal is", tab("profile") + _img(s.profile_svg, "profile")),
        ("curation", "What was curated", tab("curation") + (table_html(t["drops"]) if "drops" in t else "")),
        ("training", "How training went", tab("training") + _img(curve, "training curve")),
        ("gate", "What the gate decided and why", _gate(s, t)),
        ("lineage", "Lineage", _lineage(s.lineage)),
    ]  # fmt: skip
    nav = "".join(f'<a href="#{a}">{_e(title)}</a>' for a, title, _ in sections)
    body = "".join(_section(a, title, html) for a, title, html in sections)
    return (
        '<!DOCTYPE html>\n<html lang="en"><head><meta charset="utf-8">'
        f'<meta http-equiv="Content-Security-Policy" content="{_e(_csp())}">'
        f"<title>rlstream run report: {_e(s.folder.name)}</title><style>{CSS}</style></head>"
        f'<body><h1>rlstream run report</h1><p class="muted">{_e(s.folder)}</p>'
        f"<nav>{nav}</nav>{body}</body></html>\n"
    )


def write_html_report(folder: Path, out: Path | None = None) -> Path:
    """Render ``folder``'s story to ``out`` (default ``folder/report.html``); returns the path."""
    dest = out or folder / REPORT_FILE
    dest.parent.mkdir(parents=True, exist_ok=True)
    dest.write_text(render_html(load_story(folder)), encoding="utf-8")
    return dest
