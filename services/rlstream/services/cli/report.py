"""How the CLI draws the library's pipeline: transient bars per stage, one summary per stage."""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable
from contextlib import AbstractContextManager
from pathlib import Path
from types import TracebackType
from typing import Self

from rlstream.curation import CurationResult, Manifest
from rlstream.ingest import IngestSummary
from rlstream.metrics import Profile, render_profile
from rlstream.services.cli.common import console, out, progress


class BarStages:
    """:class:`rlstream.pipeline.Stages` drawn as one transient progress bar per stage.

    Use as a context manager so a bar left open by an error is closed."""

    def __init__(self) -> None:
        self._bar: AbstractContextManager[Callable[[int], None]] | None = None
        self._advance: Callable[[int], None] | None = None

    def __enter__(self) -> Self:
        return self

    def __exit__(
        self, kind: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.done("", 0.0, "")

    def start(self, name: str, total: int | None = None) -> None:
        self.done(name, 0.0, "")
        self._bar = progress(name, total)
        self._advance = self._bar.__enter__()

    def advance(self, n: int = 1) -> None:
        if self._advance is not None:
            self._advance(n)

    def done(self, name: str, seconds: float, summary: str) -> None:
        bar, self._bar, self._advance = self._bar, None, None
        if bar is not None:
            bar.__exit__(None, None, None)


def print_ingest(s: IngestSummary, out: Path, rejects: Path) -> None:
    console.print(
        f"read [bold]{s.read:,}[/] records from {s.files} file(s): {s.ok:,} transcripts → {out}, "
        f"{s.rejected:,} rejected → {rejects}, {s.duplicates:,} duplicate ids dropped"
    )
    if s.by_format:
        console.print(
            "  formats: " + ", ".join(f"{k} {v:,}" for k, v in sorted(s.by_format.items()))
        )
    if s.task_key_groups:
        console.print(
            "  task-key groups by rule: "
            + ", ".join(f"{k} {v:,}" for k, v in sorted(s.task_key_groups.items()))
        )
    if s.rejects_by_code:
        console.print(
            "  rejects: " + ", ".join(f"{k} {v:,}" for k, v in sorted(s.rejects_by_code.items()))
        )
    if s.pii_found:
        console.print(
            "  PII redacted: " + ", ".join(f"{k} {v:,}" for k, v in sorted(s.pii_found.items()))
        )


def print_curation(result: CurationResult, manifest: Manifest, dest: Path) -> None:
    console.print(
        f"kept [bold]{len(result.kept):,}[/] groups / {result.kept_rollouts:,} rollouts of "
        f"{result.input_rollouts:,}; method: [bold]{manifest.method}[/] ({manifest.method_reason})"
    )
    for reason, n in sorted({**result.dropped_groups, **result.dropped_rollouts}.items()):
        if n:
            console.print(f"  dropped {reason}: {n:,}")
    if result.mixed_policy_groups:
        console.print(
            f"  [yellow]warning:[/] {result.mixed_policy_groups:,} kept group(s) pool rollouts "
            "of several policies (model / agent version): their pass rates describe the mix; "
            "curate each policy's logs alone to keep groups on-policy"
        )
    if result.heldout:
        console.print(
            f"  held out for evaluation: {len(result.heldout):,} task keys → heldout.jsonl"
        )
    console.print(f"dataset [bold]{manifest.dataset_id[:16]}[/] → {dest}  (see next_steps.md)")


def print_grade(counts: Counter[str], scored: Path, failures: Path) -> None:
    console.print(
        f"graded [bold]{counts['graded']:,}[/] rollouts ({counts['passed']:,} pass) → {scored}; "
        f"{counts['failed']:,} could not be graded → {failures}"
    )
    for key, n in sorted(counts.items()):
        if key.startswith("failed:"):
            console.print(f"  {key[7:]}: {n:,}")


class ConsoleReport(BarStages):
    """:class:`rlstream.pipeline.batch.BatchReport` for ``improve run`` and ``demo --quick``."""

    def ingested(self, summary: IngestSummary, transcripts: Path, rejects: Path) -> None:
        print_ingest(summary, transcripts, rejects)

    def graded(self, counts: Counter[str]) -> None:
        console.print(
            f"graded {counts['graded']:,} rollouts ({counts['passed']:,} pass), "
            f"{counts['failed']:,} ungradable → scored.failures.jsonl"
        )

    def profiled(self, profile: Profile) -> None:
        out.print(render_profile(profile))

    def curated(self, result: CurationResult, manifest: Manifest, dest: Path) -> None:
        print_curation(result, manifest, dest)
