"""A finished run folder read back as one story: what came in, where the signal is, what was
curated, how training went, what the gate decided, and the lineage.

Everything here is *read* from the files the pipeline already wrote (ingest.json,
profile.json, dataset/manifest.json, run/run.json + metrics.json, report.json, lineage.json
and the SVG plots); nothing is recomputed. Both the HTML page and ``rlstream report``'s
terminal tables are drawn from :func:`story_tables`, so they cannot disagree.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import orjson

from rlstream.curation import Manifest
from rlstream.errors import ConfigError
from rlstream.evaluation import PromptResult
from rlstream.evaluation.report import PLOTS, metric_rows
from rlstream.ingest import IngestSummary
from rlstream.metrics import Profile
from rlstream.metrics.plot import profile_svg

INGEST_FILE = "ingest.json"


@dataclass(frozen=True)
class Table:
    """A titled table of preformatted cells (the page and the terminal print the same)."""

    title: str
    header: tuple[str, ...]
    rows: tuple[tuple[str, ...], ...]


@dataclass(frozen=True)
class RunStory:
    """The artefacts of one run folder; any may be missing (a batch run has no gate)."""

    folder: Path
    ingest: tuple[IngestSummary, ...] = ()
    profile: Profile | None = None
    profile_svg: str | None = None
    manifest: Manifest | None = None
    run: dict[str, Any] | None = None
    train_metrics: dict[str, Any] = field(default_factory=dict)
    evaluation: dict[str, Any] | None = None
    eval_plots: dict[str, str] = field(default_factory=dict)
    lineage: dict[str, Any] | None = None
    #: ``rlstream demo --cycles``: one record per turn of the loop (cycles.json)
    cycles: list[dict[str, Any]] | None = None

    @property
    def decision(self) -> str | None:
        return None if self.evaluation is None else str(self.evaluation["decision"])

    @property
    def reasons(self) -> tuple[str, ...]:
        return tuple(str(r) for r in (self.evaluation or {}).get("reasons", ()))

    @property
    def curve(self) -> list[dict[str, float]]:
        return list(self.train_metrics.get("curve") or [])


def _json(path: Path) -> Any:
    try:
        return orjson.loads(path.read_bytes())
    except orjson.JSONDecodeError as exc:
        raise ConfigError(f"{path} is not valid JSON: {exc}") from exc


def _first(folder: Path, *names: str) -> Path | None:
    return next((folder / n for n in names if (folder / n).is_file()), None)


def _run_dir(folder: Path) -> Path | None:
    """run.json beside the report, in run/, or in one sub-folder (``rlstream train`` output)."""
    for cand in (folder, folder / "run", *sorted(p for p in folder.iterdir() if p.is_dir())):
        if (cand / "run.json").is_file() or (cand / "metrics.json").is_file():
            return cand
    return None


def load_story(folder: Path) -> RunStory:
    """Read what a finished ``improve run`` / ``eval`` / ``demo`` folder holds."""
    if not folder.is_dir():
        raise ConfigError(f"not a run folder: {folder}")
    ingest_path = folder / INGEST_FILE
    ingest = (
        tuple(IngestSummary.model_validate(s) for s in _json(ingest_path))
        if ingest_path.is_file()
        else ()
    )
    manifest_path = _first(folder, "dataset/manifest.json", "manifest.json")
    manifest = Manifest.model_validate(_json(manifest_path)) if manifest_path else None
    profile, svg = _profile(folder, manifest)
    run_dir = _run_dir(folder)
    run = metrics = None
    if run_dir is not None:
        run = _json(run_dir / "run.json") if (run_dir / "run.json").is_file() else None
        metrics = _json(run_dir / "metrics.json") if (run_dir / "metrics.json").is_file() else None
    report_path = folder / "report.json"
    evaluation = _json(report_path) if report_path.is_file() else None
    plots = {n: (folder / n).read_text() for n in PLOTS if (folder / n).is_file()}
    lineage_path = folder / "lineage.json"
    cycles_path = folder / "cycles.json"
    story = RunStory(
        folder=folder,
        ingest=ingest,
        profile=profile,
        profile_svg=svg,
        manifest=manifest,
        run=run,
        train_metrics=metrics or {},
        evaluation=evaluation,
        eval_plots=plots,
        lineage=_json(lineage_path) if lineage_path.is_file() else None,
        cycles=_json(cycles_path) if cycles_path.is_file() else None,
    )
    if not any((ingest, profile, manifest, run, metrics, evaluation, story.lineage, story.cycles)):
        raise ConfigError(
            f"{folder} holds none of ingest.json, profile.json, dataset/manifest.json, "
            "run.json, report.json, lineage.json, cycles.json: not a finished run folder"
        )
    return story


def _profile(folder: Path, manifest: Manifest | None) -> tuple[Profile | None, str | None]:
    """profile.json (+ profile.svg) of a batch run, else the profile curation stored in the
    manifest (the demo), drawn by the same plot function ``improve run`` uses."""
    if (folder / "profile.json").is_file():
        p = Profile.model_validate(_json(folder / "profile.json"))
        svg = folder / "profile.svg"
        return p, svg.read_text() if svg.is_file() else None
    if manifest is not None and manifest.profiles:
        p = next(iter(manifest.profiles.values()))
        return p, profile_svg(p, manifest.thresholds.band)
    return None, None


def _f(x: float | int | None, digits: int = 3) -> str:
    if x is None:
        return "-"
    return f"{x:,}" if isinstance(x, int) else f"{x:.{digits}f}"


def _ingest_table(s: RunStory) -> Table | None:
    if not s.ingest:
        return None
    rows: list[tuple[str, ...]] = []
    for i, b in enumerate(s.ingest):
        name = f"batch {i + 1}: " if len(s.ingest) > 1 else ""
        formats = ", ".join(f"{k} {v:,}" for k, v in sorted(b.by_format.items())) or "-"
        rejects = ", ".join(f"{k} {v:,}" for k, v in sorted(b.rejects_by_code.items()))
        pii = ", ".join(f"{k} {v:,}" for k, v in sorted(b.pii_found.items())) or "-"
        rows += [
            (f"{name}records read", f"{b.read:,} from {b.files} file(s)"),
            (f"{name}transcripts", f"{b.ok:,}"),
            (f"{name}rejected", f"{b.rejected:,}" + (f" ({rejects})" if rejects else "")),
            (f"{name}duplicate ids dropped", f"{b.duplicates:,}"),
            (f"{name}formats", formats),
            (f"{name}PII redacted", pii),
        ]
    return Table("What came in", ("", ""), tuple(rows))


def _profile_table(p: Profile | None) -> Table | None:
    if p is None:
        return None
    rows: list[tuple[str, str]] = [
        ("rollouts / groups", f"{p.rollouts:,} / {p.groups:,}"),
        (
            "graded (n>=2) / mixed / singletons",
            f"{p.graded_groups:,} / {p.mixed_groups:,} / {p.singletons:,}",
        ),
        ("all-pass / all-fail", f"{p.all_pass_groups:,} / {p.all_fail_groups:,}"),
        ("gradient support", _f(p.gradient_support)),
        ("pass@1", _f(p.pass_at_1)),
    ]
    if p.headline_k:
        k = str(p.headline_k)
        rows += [(f"pass@{k}", _f(p.pass_at_k.get(k))), (f"pass^{k}", _f(p.pass_hat_k.get(k)))]
    rows += [
        ("headroom", _f(p.headroom)),
        ("mean reward", _f(p.mean_reward)),
        ("verdict", p.verdict),
        ("method", f"{p.method}: {p.method_reason}"),
    ]
    scan = p.hack_scan
    if scan is not None:
        rows += [("hack-scan alarm", a) for a in scan.alarms]
        rows += [("hack-scan warning", w) for w in scan.warnings]
    return Table("Where the signal is", ("", ""), tuple(rows))


def _curation_tables(m: Manifest | None) -> list[Table]:
    if m is None:
        return []
    c = m.counts
    rows = (
        ("dataset", m.dataset_id[:16]),
        ("kept groups / rollouts", f"{c.get('kept_groups', 0):,} / {c.get('kept_rollouts', 0):,}"),
        ("of input rollouts", f"{c.get('input_rollouts', 0):,}"),
        (
            "rows sft / dpo / grpo",
            "{:,} / {:,} / {:,}".format(
                c.get("sft_rows", 0), c.get("dpo_rows", 0), c.get("grpo_rows", 0)
            ),
        ),
        ("held-out task keys", f"{len(m.heldout_task_keys):,}"),
        ("method", f"{m.method} ({m.method_reason})"),
        ("granularity", m.granularity),
    )
    drops = sorted(
        [("group", r, n) for r, n in m.dropped_groups.items() if n]
        + [("rollout", r, n) for r, n in m.dropped_rollouts.items() if n],
        key=lambda t: -t[2],
    )
    return [
        Table("What was curated", ("", ""), rows),
        Table(
            "Drop reasons",
            ("reason", "unit", "dropped"),
            tuple((r, u, f"{n:,}") for u, r, n in drops),
        ),
    ]


#: run.json facts the training table already has a row for
_SHOWN = frozenset({"steps", "method", "backend", "run_id", "status"})


def _training_table(s: RunStory) -> Table | None:
    if s.run is None and not s.train_metrics:
        return None
    run = s.run or {}
    m = {**(run.get("metrics") or {}), **{k: v for k, v in s.train_metrics.items() if k != "curve"}}
    rows: list[tuple[str, str]] = [
        ("run", str(run.get("run_id", "-"))),
        (
            "status",
            f"{run.get('status', '-')}" + (f" ({run['reason']})" if run.get("reason") else ""),
        ),
        (
            "method / backend",
            f"{run.get('method', '-')} / {(run.get('backend') or {}).get('name', '-')}",
        ),
        ("steps", str(run.get("steps", m.get("steps", "-")))),
    ]
    rows += [(k, _f(v) if isinstance(v, float | int) and not isinstance(v, bool) else str(v))
             for k, v in sorted(m.items()) if isinstance(v, float | int | str) and k not in _SHOWN]  # fmt: skip
    return Table("How training went", ("", ""), tuple(rows))


def _change(x: float | None, y: float | None) -> str:
    return "-" if x is None or y is None else f"{y - x:+.3f}"


def _gate_tables(ev: dict[str, Any] | None) -> list[Table]:
    if ev is None:
        return []
    metrics = Table(
        "Baseline vs candidate (held-out prompts)",
        ("metric", "baseline", "candidate", "change"),
        tuple((n, _f(x), _f(y), _change(x, y)) for n, x, y in metric_rows(ev)),
    )
    metric = ev.get("gate_metric", "pass_at_1")
    diffs = [PromptResult.model_validate(p) for p in ev.get("prompts", [])]
    f = PromptResult.rate if metric == "pass_at_1" else PromptResult.mean
    ranked = sorted(diffs, key=lambda p: (-abs(p.diff(metric)), p.task_key))
    per_prompt = Table(
        f"Per-prompt differences ({metric}, changed first)",
        ("task key", "baseline", "candidate", "difference"),
        tuple(
            (p.task_key, _f(f(p.baseline)), _f(f(p.candidate)), f"{p.diff(metric):+.3f}")
            for p in ranked
        ),
    )
    return [metrics, per_prompt]


def _short(model: str) -> str:
    """A registry id (sha256 hex) as its 12-character prefix; other names whole."""
    hexish = len(model) >= 16 and all(c in "0123456789abcdef" for c in model)
    return model[:12] if hexish else model


def cycles_tables(cycles: list[dict[str, Any]] | None) -> list[Table]:
    """Per cycle: who served, what came back, the held-out metric with its CI, the
    decision and who serves next; then every served conversation by the model behind it."""
    if not cycles:
        return []
    rows = []
    for c in cycles:
        sft = c.get("dataset_rows", {}).get("sft.jsonl", {})
        rows.append(
            (
                str(c["cycle"]),
                _short(c["serving_before"]),
                f"{c['conversations']} ({c['served_pass_rate']:.0%} pass)",
                ", ".join(f"{_short(k)}: {v}" for k, v in sft.items()) or "-",
                f"{c['baseline']:.3f} -> {c['candidate']:.3f}",
                f"{c['delta']:+.3f} [{c['ci_low']:+.3f}, {c['ci_high']:+.3f}]",
                str(c["n_prompts"]),
                str(c["decision"]),
                _short(c["serving_after"]) + (f" ({c['swap']})" if c.get("swap") else ""),
            )
        )
    per_cycle = Table(
        "cycles",
        (
            "cycle", "served by", "conversations", "SFT rows by policy",
            "held-out metric champion -> candidate", "gain [95% CI]", "prompts", "decision",
            "serving after",
        ),
        tuple(rows),
    )  # fmt: skip
    last = cycles[-1].get("conversations_per_model", {})
    per_model = Table(
        "conversations served, by the model that produced them",
        ("model", "conversations"),
        tuple((m, str(n)) for m, n in last.items()),
    )
    return [per_cycle, per_model]


def story_tables(s: RunStory) -> dict[str, Table]:
    """Every table of the story, keyed by section; the page and the terminal both use these."""
    tables: dict[str, Table | None] = {
        "ingest": _ingest_table(s),
        "profile": _profile_table(s.profile),
        "training": _training_table(s),
    }
    for key, t in zip(("curation", "drops"), _curation_tables(s.manifest), strict=False):
        tables[key] = t
    for key, t in zip(("gate", "prompts"), _gate_tables(s.evaluation), strict=False):
        tables[key] = t
    for key, t in zip(("cycles", "served"), cycles_tables(s.cycles), strict=False):
        tables[key] = t
    return {k: v for k, v in tables.items() if v is not None}
