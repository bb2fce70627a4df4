"""A :class:`StatusSnapshot` as rich tables: what ``rlstream status`` prints once and the
live view of ``rlstream up`` redraws. A section whose source failed is one marked
"unavailable: reason" row, so a dead broker never hides the rest of the screen."""

from __future__ import annotations

from datetime import UTC, datetime

from rich import box
from rich.console import Console, ConsoleOptions, Group, RenderableType, RenderResult
from rich.measure import Measurement
from rich.table import Table
from rich.text import Text

from rlstream.stackstatus.model import Section, StatusSnapshot

_STATE_STYLE = {
    "ready": "green",
    "up": "green",
    "not ready": "yellow",
    "unknown": "yellow",
    "unhealthy": "red",
    "down": "red",
    "unreachable": "red",
}


def _n(value: float | None, fmt: str = ",.0f") -> str:
    return "-" if value is None else format(value, fmt)


def _ago(at: datetime | None, now: datetime) -> str:
    if at is None:
        return "?"
    s = max(0.0, (now - at).total_seconds())
    return f"{s:.0f}s" if s < 120 else f"{s / 60:.0f}m" if s < 7200 else f"{s / 3600:.0f}h"


class OneLine:
    """Text cut to one line at whatever width its column gets (a long reason must not
    make a table row tall, nor squeeze the figures beside it: the full text is in
    ``--json`` and in the problem lines ``rlstream status`` prints)."""

    def __init__(self, text: str, style: str = "") -> None:
        self.text, self.style = " ".join(text.split()), style

    def __rich_measure__(self, console: Console, options: ConsoleOptions) -> Measurement:
        return Measurement(min(8, len(self.text)), max(1, len(self.text)))

    def __rich_console__(self, console: Console, options: ConsoleOptions) -> RenderResult:
        t = Text(self.text, style=self.style, no_wrap=True, overflow="ellipsis")
        t.truncate(options.max_width, overflow="ellipsis")
        yield t


def _table(title: str, *columns: str) -> Table:
    t = Table(title=title, title_justify="left", title_style="bold", box=box.SIMPLE_HEAD,
              show_edge=False, pad_edge=False, expand=False)  # fmt: skip
    for c in columns:
        # the figures keep their width; a OneLine column gives way
        t.add_column(c, no_wrap=c not in ("why", "reason", "source", "topic"))
    return t


def _unavailable(title: str, sec: Section) -> Text | None:
    """One red line instead of the table, when the section's source could not be read."""
    if sec.unavailable is None:
        return None
    text = Text(f"{title}: ", style="bold")
    text.append(f"unavailable: {sec.unavailable}", style="red")
    return text


def services_table(snap: StatusSnapshot) -> Table:
    t = _table("Services", "name", "state", "pid", "consumed", "published", "dead-lettered", "why")
    for s in snap.services:
        t.add_row(
            s.name,
            Text(s.state, style=_STATE_STYLE.get(s.state, "")),
            "" if s.pid is None else str(s.pid),
            _n(s.consumed),
            _n(s.published),
            _n(s.dead_lettered),
            OneLine(s.reason or "", style="dim"),
        )
    return t


def topics_table(snap: StatusSnapshot) -> RenderableType:
    off = _unavailable("Topics", snap.topics)
    if off is not None:
        return off
    t = _table("Topics", "topic", "parts", "produced", "per s", "consumer", "consumed", "lag")
    for tp in snap.topics.items:
        name = Text(tp.name, style="red" if tp.dead_letter and tp.produced else "")
        if not tp.exists:
            t.add_row(name, Text("absent", style="yellow"), "", "", "", "", "")
            continue
        first = tp.consumers[0] if tp.consumers else None
        lag_style = "yellow" if first is not None and first.lag else ""
        t.add_row(
            name,
            str(tp.partitions),
            _n(tp.produced),
            _n(tp.produced_per_s, ",.1f"),
            "" if first is None else first.service or first.group,
            "" if first is None else _n(first.consumed),
            Text("" if first is None else _n(first.lag), style=lag_style),
        )
        for c in tp.consumers[1:]:
            t.add_row("", "", "", "", c.service or c.group, _n(c.consumed), _n(c.lag))
    return t


def pool_table(snap: StatusSnapshot) -> RenderableType:
    off = _unavailable("Pool", snap.pool)
    if off is not None or snap.pool.counts is None:
        return off or Text("Pool: -")
    t = _table("Pool", "", "pending", "released")
    c = snap.pool.counts
    t.add_row("groups", _n(c.groups_pending), _n(c.groups_released))
    t.add_row("rollouts", _n(c.rollouts_pending), _n(c.rollouts_released))
    t.add_row("datasets", "", _n(c.datasets))
    return t


def runs_table(snap: StatusSnapshot) -> RenderableType:
    off = _unavailable("Training runs", snap.runs)
    if off is not None:
        return off
    counts = ", ".join(f"{k} {v}" for k, v in sorted(snap.runs.by_status.items()))
    t = _table(f"Training runs ({counts or 'none'})", "run", "agent", "method", "state", "age")
    for r in snap.runs.recent:
        t.add_row(r.run_id[:24], r.agent, r.method, r.status, _ago(r.updated_at, snap.taken_at))
    return t


def evaluations_table(snap: StatusSnapshot) -> RenderableType:
    off = _unavailable("Evaluations", snap.evaluations)
    if off is not None:
        return off
    counts = ", ".join(f"{k} {v}" for k, v in sorted(snap.evaluations.by_decision.items()))
    t = _table(f"Evaluations ({counts or 'none'})", "run", "agent", "decision", "age")
    for e in snap.evaluations.recent:
        t.add_row((e.run_id or e.evaluation_id)[:24], e.agent, e.decision,
                  _ago(e.created_at, snap.taken_at))  # fmt: skip
    return t


def dead_letters_table(snap: StatusSnapshot) -> RenderableType:
    sec = snap.dead_letters
    off = _unavailable("Dead letters", sec)
    if off is not None:
        return off
    t = _table(f"Dead letters ({sec.total:,} in all; newest first)", "age", "service", "code",
               "reason", "source")  # fmt: skip
    for d in sec.recent:
        t.add_row(_ago(d.failed_at, snap.taken_at), d.service, Text(d.code, style="red"),
                  OneLine(d.reason), OneLine(d.source))  # fmt: skip
    return t


def header(snap: StatusSnapshot, title: str = "rlstream") -> Text:
    rate = "-" if snap.scored_per_s is None else f"{snap.scored_per_s:,.1f}"
    total = "-" if snap.scored_total is None else f"{snap.scored_total:,}"
    text = Text(f"{title}  ", style="bold")
    if snap.stack_state:
        text.append(f"stack {snap.stack_state}  ")
    text.append(f"rollouts scored: {total} ({rate}/s)  ")
    stamp = snap.taken_at.astimezone(UTC).strftime("%H:%M:%SZ")
    text.append(f"at {stamp} in {snap.collect_s:.2f}s", style="dim")
    return text


def render_snapshot(snap: StatusSnapshot, title: str = "rlstream") -> RenderableType:
    why = {snap.pool.unavailable, snap.runs.unavailable, snap.evaluations.unavailable}
    side: RenderableType
    if len(why) == 1 and snap.pool.unavailable is not None:  # the database: say it once
        side = _unavailable("Pool, training runs, evaluations", snap.pool) or ""
    else:
        side = Table.grid(padding=(0, 4))
        side.add_row(pool_table(snap), runs_table(snap), evaluations_table(snap))
    return Group(
        header(snap, title),
        services_table(snap),
        topics_table(snap),
        side,
        dead_letters_table(snap),
    )
