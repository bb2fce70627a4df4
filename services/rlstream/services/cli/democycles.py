"""``rlstream demo --cycles N``: run the flywheel and print it, one line per stage and a table
of the cycles (the same table the HTML report shows)."""

from __future__ import annotations

import sys
from pathlib import Path

from rich.progress import (
    BarColumn,
    MofNCompleteColumn,
    Progress,
    SpinnerColumn,
    TaskID,
    TextColumn,
    TimeElapsedColumn,
)
from rich.table import Table

from rlstream.pipeline.cycles import CycleRecord, CyclesConfig, run_cycles
from rlstream.reporting import write_html_report
from rlstream.reporting.story import cycles_tables
from rlstream.services.cli.common import console


class _Lines:
    """A live bar per running stage, one printed line per finished one."""

    def __init__(self, bar: Progress) -> None:
        self.bar = bar
        self.task: TaskID | None = None

    def start(self, name: str, total: int | None = None) -> None:
        if self.task is not None:
            self.bar.remove_task(self.task)
        self.task = self.bar.add_task(name, total=total)

    def advance(self, n: int = 1) -> None:
        if self.task is not None and n:
            self.bar.advance(self.task, n)

    def done(self, name: str, seconds: float, summary: str) -> None:
        if self.task is not None:
            self.bar.remove_task(self.task)
            self.task = None
        self.bar.console.print(f"[green]✓[/] [bold]{name}[/] ({seconds:.1f} s) {summary}")


def _serve_argv() -> tuple[str, ...]:
    """This interpreter's ``rlstream serve`` (the installed script when there is one)."""
    script = Path(sys.executable).parent / "rlstream"
    if script.is_file():
        return (str(script), "serve")
    return (sys.executable, "-m", "rlstream.services.cli.main", "serve")


def print_cycles(records: list[CycleRecord]) -> None:
    for t in cycles_tables([r.model_dump(mode="json") for r in records]):
        view = Table(title=t.title)
        for h in t.header:
            view.add_column(h)
        for row in t.rows:
            view.add_row(*row)
        console.print(view)


def run_and_print(cfg: CyclesConfig) -> list[CycleRecord]:
    if cfg.serve_argv == CyclesConfig().serve_argv:
        cfg = cfg.model_copy(update={"serve_argv": _serve_argv()})
    columns = (
        SpinnerColumn(),
        TextColumn("[bold]{task.description}"),
        BarColumn(),
        MofNCompleteColumn(),
        TimeElapsedColumn(),
    )
    with Progress(*columns, console=console, disable=not sys.stderr.isatty()) as bar:
        records = run_cycles(cfg, _Lines(bar))
    print_cycles(records)
    out = cfg.folder / "out"
    for r in records:
        colour = {"promote": "green", "reject": "red"}.get(r.decision, "yellow")
        console.print(
            f"cycle {r.cycle}: [bold {colour}]{r.decision}[/]; serving {r.serving_after[:16]}"
            f"{' (' + r.swap + ')' if r.swap else ''}; trace: rlstream lineage "
            f"{r.candidate_model[:12]}"
        )
    page = write_html_report(out)
    console.print(f"the loop on one page: [bold]{page.resolve()}[/]", soft_wrap=True)
    return records
