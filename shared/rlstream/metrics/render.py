"""Rich rendering of a Profile for the CLI (tables plus a small text histogram)."""

from __future__ import annotations

from rich.console import Group, RenderableType
from rich.table import Table
from rich.text import Text

from rlstream.metrics.models import Profile

_VERDICT_STYLE = {
    "trains": "bold green",
    "thin": "yellow",
    "flat": "red",
    "insufficient": "magenta",
}


def _f(x: float | None, digits: int = 3) -> str:
    return "-" if x is None else f"{x:.{digits}f}"


def _summary(p: Profile) -> Table:
    t = Table(title="Profile", show_header=False, title_justify="left")
    t.add_column("metric", style="bold")
    t.add_column("value")
    ci = p.ci
    gs = _f(p.gradient_support)
    if ci and ci.gradient_support:
        gs += f"  [{_f(ci.gradient_support.low)}, {_f(ci.gradient_support.high)}]"
    t.add_row("rollouts / groups", f"{p.rollouts} / {p.groups}")
    if p.policies > 1:
        t.add_row(
            "policies", f"{p.policies} (model / agent version): one group per task and policy"
        )
    if p.mixed_policy_tasks:
        t.add_row(
            Text("warning", style="yellow"),
            Text(
                f"{p.mixed_policy_tasks} task(s) have rollouts of several policies; they were "
                "not pooled (profile each policy's logs alone to compare them)",
                style="yellow",
            ),
        )
    t.add_row(
        "graded (n>=2) / mixed / singletons",
        f"{p.graded_groups} / {p.mixed_groups} / {p.singletons}",
    )
    t.add_row("all-pass / all-fail", f"{p.all_pass_groups} / {p.all_fail_groups}")
    t.add_row("median group size", _f(p.median_group_size, 1))
    t.add_row("gradient support", gs)
    t.add_row("  unbiased (x n/(n-1))", _f(p.gradient_support_unbiased))
    t.add_row("pass@1", _f(p.pass_at_1))
    if p.headline_k:
        k = str(p.headline_k)
        groups = p.pass_at_k_groups.get(k)
        on = f"  (over {groups} groups with n >= {k})" if groups is not None else ""
        t.add_row(f"pass@{k}", _f(p.pass_at_k.get(k)) + on)
        t.add_row(f"pass^{p.headline_k}", _f(p.pass_hat_k.get(str(p.headline_k))))
    t.add_row("headroom", _f(p.headroom))
    t.add_row("mean reward", _f(p.mean_reward))
    t.add_row("verdict", Text(p.verdict, style=_VERDICT_STYLE[p.verdict]))
    t.add_row("method", Text(f"{p.method}: {p.method_reason}"))
    return t


def _histogram(p: Profile, width: int = 30) -> Text:
    peak = max(p.histogram.counts) if p.histogram.counts else 0
    lines = ["group pass rate (graded groups)"]
    for i, count in enumerate(p.histogram.counts):
        lo, hi = p.histogram.edges[i], p.histogram.edges[i + 1]
        bar = "#" * (round(width * count / peak) if peak else 0)
        lines.append(f"{lo:.1f}-{hi:.1f} | {bar} {count}")
    return Text("\n".join(lines))


def _scan(p: Profile) -> RenderableType:
    s = p.hack_scan
    if s is None:
        return Text("hack scan: not run")
    t = Table(
        title=f"Hack scan (floor {_f(s.floor, 2)}, {s.scanned_groups} groups)", title_justify="left"
    )
    for col in ("feature", "within rho", "pooled rho", "above floor", "endorsed"):
        t.add_column(col)
    for f in s.features[:12]:
        t.add_row(
            f.name,
            f"{f.within_rho:+.3f}",
            _f(f.pooled_rho),
            "yes" if f.above_floor else "",
            "yes" if f.endorsed else "",
        )
    notes: list[RenderableType] = [t]
    if s.refused:
        notes.append(Text(f"no hack named: {s.refused_reason}", style="yellow"))
    for a in s.alarms:
        notes.append(Text(f"ALARM: {a}", style="bold red"))
    for w in s.warnings:
        notes.append(Text(f"warning: {w}", style="yellow"))
    return Group(*notes)


def render_profile(profile: Profile) -> RenderableType:
    """Summary table, pass-rate histogram and hack-scan table, stacked."""
    return Group(_summary(profile), _histogram(profile), _scan(profile))
