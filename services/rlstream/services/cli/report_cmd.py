"""``rlstream report RUN_DIR``: the run's story as terminal tables and one HTML page.

Both come from :func:`rlstream.reporting.story_tables` over the files the run wrote, so the
terminal and the page show the same numbers; nothing is recomputed here.
"""

from __future__ import annotations

from pathlib import Path

import typer
from rich.table import Table as RichTable

from rlstream.reporting import Table, load_story, render_html, story_tables
from rlstream.reporting.page import REPORT_FILE
from rlstream.services.cli.common import console, friendly_errors, out

#: the per-prompt table can hold hundreds of rows: the terminal shows the first few
TERMINAL_ROWS = 10
_COLOUR = {"promote": "green", "reject": "red", "insufficient": "yellow"}


def _rich(t: Table, limit: int | None = None) -> RichTable:
    header = any(t.header)
    table = RichTable(title=t.title, title_justify="left", show_header=header)
    for h in t.header:
        table.add_column(h)
    rows = t.rows if limit is None else t.rows[:limit]
    for row in rows:
        table.add_row(*row)
    if limit is not None and len(t.rows) > limit:
        table.caption = f"first {limit} of {len(t.rows):,} rows; all of them on the page"
    return table


@friendly_errors
def report(
    folder: Path = typer.Argument(
        ..., metavar="RUN_DIR", help="a finished improve run / eval / demo output folder"
    ),
    dest: Path = typer.Option(
        None, "--out", help=f"the HTML file [default: RUN_DIR/{REPORT_FILE}]"
    ),
    quiet: bool = typer.Option(False, "--quiet", "-q", help="write the page, print only its path"),
) -> None:
    """Write one self-contained HTML page (no network: styles and plots inline) with the
    profile, curation and drop reasons, training curve, gate decision with its reasons and
    per-prompt differences, pass@k before and after, and the lineage down to conversation
    ids; print the same tables here."""
    story = load_story(folder)
    if not quiet:
        for key, t in story_tables(story).items():
            out.print(_rich(t, TERMINAL_ROWS if key == "prompts" else None))
        if story.decision:
            colour = _COLOUR.get(story.decision, "yellow")
            console.print(f"gate decision: [bold {colour}]{story.decision}[/]")
            for r in story.reasons:
                console.print(f"  {r}")
    path = dest or folder / REPORT_FILE
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(render_html(story), encoding="utf-8")
    out.print(str(path) if quiet else f"report page → {path}", soft_wrap=True)
