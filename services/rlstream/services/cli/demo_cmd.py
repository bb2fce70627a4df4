"""``rlstream demo``: the whole loop on embedded defaults, from sample logs to a promoted model.

The loop itself is :func:`rlstream.pipeline.run_demo`; this command parses options and
draws one progress line per stage. ``--quick`` keeps the batch-only path (sample logs in
every format -> ingest -> grade -> profile -> curate, no training).
"""

from __future__ import annotations

import os
import sys
from pathlib import Path

import typer
from rich.progress import (
    BarColumn,
    MofNCompleteColumn,
    Progress,
    SpinnerColumn,
    TaskID,
    TextColumn,
    TimeElapsedColumn,
)

from rlstream.curation import CurateOptions
from rlstream.grading import SpecResolver
from rlstream.pipeline.batch import run_batch
from rlstream.reporting import write_html_report
from rlstream.sampledata import write_sample_logs
from rlstream.services.cli.common import console, friendly_errors
from rlstream.services.cli.ingest_options import build_options
from rlstream.services.cli.report import ConsoleReport

CUSTOM = "custom.jsonl"
STAGES = (
    "sample logs", "ingest", "grade", "curate", "train", "evaluate", "gate", "promote", "lineage"
)  # fmt: skip


class RichStages:
    """One line per finished stage, a live bar for the running one."""

    def __init__(self, bar: Progress) -> None:
        self.bar = bar
        self.task: TaskID | None = None

    def start(self, name: str, total: int | None = None) -> None:
        i = STAGES.index(name) + 1 if name in STAGES else 0
        self.task = self.bar.add_task(f"{i}/{len(STAGES)} {name}", total=total)

    def advance(self, n: int = 1) -> None:
        if self.task is not None and n:
            self.bar.advance(self.task, n)

    def done(self, name: str, seconds: float, summary: str) -> None:
        if self.task is not None:
            self.bar.remove_task(self.task)
            self.task = None
        i = STAGES.index(name) + 1 if name in STAGES else 0
        self.bar.console.print(
            f"[green]✓[/] [bold]{i}/{len(STAGES)} {name}[/] ({seconds:.1f} s) {summary}"
        )


def _quick(folder: Path, seed: int, scale: int) -> None:
    manifest = write_sample_logs(folder, seed=seed, scale=scale)
    console.print(
        f"[bold]1/2[/] wrote {manifest.conversations:,} sample conversations in "
        f"{len(manifest.files)} files → {folder}/logs/"
    )
    logs = sorted((folder / "logs").iterdir())
    standard = [p for p in logs if p.name != CUSTOM]
    custom = [p for p in logs if p.name == CUSTOM]
    batches = [(standard, build_options())]
    if custom:
        batches.append((custom, build_options(mapping_file=folder / "custom_mapping.yaml")))
    specs = SpecResolver.from_options(None, folder / "rewards.yaml")
    console.print("[bold]2/2[/] ingest → grade → profile → curate")
    with ConsoleReport() as report:
        run_batch(batches, specs, folder / "out", CurateOptions(), report)
    console.print(f"done: see {folder}/out/dataset/next_steps.md")
    console.print(f"report page → {write_html_report(folder / 'out')}", soft_wrap=True)


def _quiet_libraries() -> None:
    """Offline, and no library progress bars under ours."""
    for key, value in (
        ("HF_HUB_OFFLINE", "1"),
        ("HF_DATASETS_DISABLE_PROGRESS_BARS", "1"),
        ("HF_HUB_DISABLE_PROGRESS_BARS", "1"),
        ("TRANSFORMERS_VERBOSITY", "error"),
        ("TOKENIZERS_PARALLELISM", "false"),
    ):
        os.environ.setdefault(key, value)
    try:
        from transformers.utils import logging as hf_logging
    except ImportError:  # the train extra is missing: run_demo says so
        return
    hf_logging.disable_progress_bar()  # type: ignore[no-untyped-call]


@friendly_errors
def demo(
    folder: Path = typer.Option(Path("demo"), "--dir", help="where logs and outputs go"),
    seed: int = typer.Option(7, help="sample-data seed"),
    quick: bool = typer.Option(
        False, "--quick", help="batch pipeline only (every log format, no training), seconds"
    ),
    scale: int = typer.Option(1, help="--quick: multiply the number of tasks"),
    steps: int = typer.Option(20, help="LoRA SFT steps"),
    eval_prompts: int = typer.Option(150, help="held-out prompts to evaluate (at most)"),
    k: int = typer.Option(1, "--k", help="samples per prompt (1 = greedy)"),
    max_new_tokens: int = typer.Option(48, help="generation cap per sample"),
    cycles: int = typer.Option(
        0, "--cycles", min=0, help="run the flywheel N times: serve -> ... -> gate -> hot-swap"
    ),
    users: int = typer.Option(40, help="--cycles: simulated customers per cycle"),
    tasks: int = typer.Option(300, help="--cycles: production-log tasks arriving per cycle"),
) -> None:
    """Run the whole loop on sample production logs: ingest → grade → curate (held-out split)
    → train the small model with LoRA on CPU → evaluate on held-out prompts → gate → promote
    → lineage. Writes DIR/out/report.json, report.md, the plots and report.html (one page).

    --quick runs only the batch pipeline over sample logs in every supported format.

    --cycles N turns the loop N times around a served model: rlstream serve on the champion,
    simulated customers talking to it, their conversations graded and curated, a candidate
    trained and gated, and on promote the server hot-swaps (docs/demo.md).
    """
    if quick:
        _quick(folder, seed, scale)
        return
    _quiet_libraries()
    if cycles:
        from rlstream.pipeline.cycles import CyclesConfig
        from rlstream.services.cli.democycles import run_and_print

        run_and_print(
            CyclesConfig(
                folder=folder, cycles=cycles, seed=seed, n_tasks=tasks, users_per_cycle=users,
                eval_prompts=eval_prompts, train_steps=steps, max_new_tokens=max_new_tokens,
            )
        )  # fmt: skip
        return
    from rlstream.pipeline import DemoConfig, run_demo

    cfg = DemoConfig(
        folder=folder,
        seed=seed,
        train_steps=steps,
        eval_prompts=eval_prompts,
        k=max(k, 1),
        greedy=k <= 1,
        max_new_tokens=max_new_tokens,
    )
    columns = (
        SpinnerColumn(),
        TextColumn("[bold]{task.description}"),
        BarColumn(),
        MofNCompleteColumn(),
        TimeElapsedColumn(),
    )
    with Progress(*columns, console=console, disable=not sys.stderr.isatty()) as bar:
        result = run_demo(cfg, RichStages(bar))
    r = result.report
    d = r["delta"]
    console.print(
        f"\nheld-out pass@1: baseline {r['baseline']['pass_at_1']:.3f} → candidate "
        f"{r['candidate']['pass_at_1']:.3f}; {d['metric']} gain {d['mean']:+.3f} over "
        f"{d['n_prompts']} prompts never trained on ({d['test']}, one-sided p {d['p_value']:.2g})"
    )
    colour = {"promote": "green", "reject": "red"}.get(result.decision.decision, "yellow")
    console.print(
        f"decision: [bold {colour}]{result.decision.decision}[/]  model {result.model_id}"
    )
    total = sum(result.stage_seconds.values())
    console.print(f"total {total:.0f} s; report → {result.out_dir}/report.md")
    if result.model_id:
        console.print(f"trace it: rlstream lineage {result.model_id}")
    page = write_html_report(result.out_dir)
    console.print(f"the whole story on one page: [bold]{page.resolve()}[/]", soft_wrap=True)
