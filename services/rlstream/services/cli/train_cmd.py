"""``rlstream train``: train a LoRA adapter on a curated dataset, here or on Kubernetes.

Thin: the work is :func:`rlstream.training.train` (in this process) or the
``rlstream.launch`` Kubernetes launcher; this module parses options, shows progress and
prints the summary.
"""

from __future__ import annotations

import asyncio
import os
from collections.abc import Mapping
from pathlib import Path
from typing import Annotated, Any

import typer
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn
from rich.table import Table

from rlstream.errors import ConfigError
from rlstream.services.cli.common import EXIT_DATA, console, friendly_errors, out


@friendly_errors
def train(
    dataset: Annotated[Path, typer.Option("--dataset", help="a dataset folder from curate")],
    method: Annotated[
        str, typer.Option(help="auto (the dataset's pick) | sft | dpo | grpo | gspo | ppo")
    ] = "auto",
    backend: Annotated[
        str,
        typer.Option(
            help="builtin (TRL, CPU/1 GPU) | openrlhf (GPU) | verl (GPU: grpo, gspo, ppo) | "
            "nemo-rl (plan only: --dry-run "
            "writes the config; see docs/training.md for the method table)"
        ),
    ] = "builtin",
    model: Annotated[
        str | None, typer.Option(help="base model dir or hub id (default: SmolLM2-135M)")
    ] = None,
    max_steps: Annotated[int, typer.Option(min=1, help="optimizer steps")] = 20,
    output: Annotated[Path | None, typer.Option(help="run folder (default: runs/<run id>)")] = None,
    launcher: Annotated[str, typer.Option(help="local (this process) | kubernetes")] = "local",
    dry_run: Annotated[bool, typer.Option("--dry-run", help="print the plan, train nothing")] = (
        False
    ),
    backend_arg: Annotated[
        list[str] | None,
        typer.Option("--backend-arg", help="--flag=value passed to the backend (repeatable)"),
    ] = None,
    reward_config: Annotated[
        Path | None, typer.Option(help="the grader's rewards.yaml (GRPO specs with options)")
    ] = None,
    batch_size: Annotated[int, typer.Option(min=1)] = 8,
    learning_rate: Annotated[float | None, typer.Option(help="default: per method")] = None,
    max_length: Annotated[
        int | None,
        typer.Option(
            min=16,
            help="tokens per training row; longer rows are cut from the left, keeping the "
            "system prompt and the trained turn [default: 256, 2048 for turn-level datasets]",
        ),
    ] = None,
    seed: int = 0,
    on_policy: Annotated[
        str | None,
        typer.Option(
            "--on-policy",
            help="the model id being trained from (the champion): restrict the methods of "
            "--on-policy-methods to rows that model produced (the rows' policy, the model id "
            "rlstream serve logs); refused when it produced none",
        ),
    ] = None,
    on_policy_methods: Annotated[
        str, typer.Option(help="comma list of methods --on-policy restricts")
    ] = "grpo,gspo,ppo",
) -> None:
    """Train a LoRA adapter on a curated dataset (TRL built-in on CPU/one GPU, or OpenRLHF).

    Writes OUTPUT/adapter/ (safetensors), OUTPUT/metrics.json (the loss/reward curve,
    tokens/s, wall time) and OUTPUT/run.json (lineage: dataset sha256, base model hash,
    backend version, config and argv hashes).

    Examples:

      rlstream train --dataset demo/out/dataset --method sft --max-steps 20

      rlstream train --dataset . --dry-run

      rlstream train --dataset ds/ --method grpo --reward-config rewards.yaml --max-steps 5

      rlstream train --dataset ds/ --backend-arg=--lr_scheduler_type=cosine

      rlstream train --dataset ds/ --method grpo --on-policy 3f2a9c1b7d0e...

      rlstream train --dataset ds/ --launcher kubernetes --dry-run
    """
    from rlstream.training import TrainConfig
    from rlstream.training.data import default_max_length

    if launcher not in ("local", "kubernetes"):
        raise ConfigError(f"--launcher must be local or kubernetes, not {launcher!r}")
    config = TrainConfig(
        method=method,  # validated by pydantic
        max_steps=max_steps,
        batch_size=batch_size,
        learning_rate=learning_rate,
        max_length=max_length or default_max_length(dataset),
        seed=seed,
        backend_args=tuple(backend_arg or ()),
        reward_config=str(reward_config) if reward_config else None,
        on_policy=on_policy,
        on_policy_methods=tuple(m.strip() for m in on_policy_methods.split(",") if m.strip()),
    )
    if backend == "nemo-rl" and not dry_run:
        from rlstream.training.nemo_rl import PLAN_ONLY

        raise ConfigError(PLAN_ONLY)
    if launcher == "kubernetes":
        _kubernetes(dataset, config, backend, model, dry_run)
        return
    if dry_run:
        _dry_run(dataset, config, backend, model, output)
        return
    _local(dataset, config, backend, model, output)


def _default_output(dataset: Path, config: Any, backend: str) -> Path:
    """``runs/<run id>``: the id every launcher gives this dataset's run."""
    from rlstream.training import run_id_for
    from rlstream.training.data import resolve_config

    manifest, _ = resolve_config(dataset, config)
    return Path("runs") / run_id_for(manifest.dataset_id)


def _dry_run(
    dataset: Path, config: Any, backend: str, model: str | None, output: Path | None
) -> None:
    from rlstream.training import plan

    target = output or _default_output(dataset, config, backend)
    p = plan(dataset, output_dir=target, config=config, backend=backend, base_model=model)
    out.print(f"[bold]{p.backend}[/] {p.method} on {p.dataset_dir} -> {p.output_dir}")
    out.print(f"base model: {p.base_model}")
    for k, v in p.summary.items():
        if k != "how_to_run":
            out.print(f"  {k}: {v}")
    if p.argv:
        out.print("argv:")
        out.print("  " + " \\\n    ".join(p.argv), soft_wrap=True, markup=False)
    for name, text in p.files.items():
        out.print(f"file {name} ({len(text)} bytes)")
    if p.summary.get("plan_only"):  # nemo-rl: the plan is the product; write it
        from rlstream.training.nemo_rl import write_plan_files

        for path in write_plan_files(p):
            out.print(f"wrote {path}", markup=False)
        out.print("how to run (rlstream has not run this plan):")
        for line in p.summary.get("how_to_run", []):
            out.print(f"  {line}", markup=False, soft_wrap=True)


def _local(
    dataset: Path, config: Any, backend: str, model: str | None, output: Path | None
) -> None:
    os.environ.setdefault("HF_DATASETS_DISABLE_PROGRESS_BARS", "1")
    os.environ.setdefault("HF_HUB_DISABLE_PROGRESS_BARS", "1")  # transformers' weight loading
    os.environ.setdefault("TRANSFORMERS_VERBOSITY", "error")
    from rlstream.training import train as run_training

    target = output or _default_output(dataset, config, backend)
    columns = [
        TextColumn("[bold]{task.description}"),
        BarColumn(),
        MofNCompleteColumn(),
        TextColumn("{task.fields[info]}"),
        TimeElapsedColumn(),
    ]
    with Progress(*columns, console=console, transient=True) as bar:
        task = bar.add_task("loading model", total=config.max_steps, info="")

        def on_step(step: int, total: int, logs: Mapping[str, float]) -> None:
            info = "  ".join(f"{k} {logs[k]:.4g}" for k in ("loss", "reward") if k in logs)
            bar.update(task, completed=step, total=total, description="training", info=info)

        result = run_training(
            dataset, output_dir=target, config=config, backend=backend, base_model=model,
            progress=on_step,
        )  # fmt: skip
    _summary(result)
    if result.status != "succeeded":
        console.print(f"[bold red]error:[/] training failed: {result.reason}")
        raise typer.Exit(EXIT_DATA)


def _summary(result: Any) -> None:
    m = result.metrics
    t = Table(title=f"run {result.run_id}", show_header=False)
    t.add_row("status", result.status)
    t.add_row("backend / method", f"{result.backend} / {result.method}")
    t.add_row("steps", str(result.steps))
    if m.get("first_loss") is not None:
        t.add_row("loss first -> last", f"{m['first_loss']:.4f} -> {m['last_loss']:.4f}")
    if m.get("reward"):
        r = m["reward"]
        t.add_row(
            "reward samples", f"{r['samples']} graded, {r['passed']} passed, {r['errors']} errors"
        )
    for reason, n in (m.get("skipped_rows") or {}).items():
        t.add_row("skipped rows", f"{n}: {reason}")
    t.add_row("tokens/s", f"{m.get('tokens_per_second', 0):,.1f} ({m.get('tokens', 0):,} tokens)")
    t.add_row(
        "train / wall", f"{m.get('train_seconds', 0):.1f} s / {m.get('wall_seconds', 0):.1f} s"
    )
    t.add_row("output", result.output_dir)
    out.print(t)


def _kubernetes(dataset: Path, config: Any, backend: str, model: str | None, dry_run: bool) -> None:
    """Plan, budget, record and launch the run as the curator does (one coordinator), with
    this command's TrainConfig: every flag reaches the Job's ``--config``."""
    try:
        from rlstream.launch import LaunchRequest, LaunchSettings, plan_run
        from rlstream.launch.k8s_manifest import job_manifest
    except ImportError as exc:
        raise ConfigError(
            f"the kubernetes launcher is not available in this build ({exc})"
        ) from exc
    settings = LaunchSettings()
    request = LaunchRequest.from_dataset(dataset)
    if dry_run:
        import yaml

        from rlstream.launch.budget import budget_for_run
        from rlstream.training.data import method_rows, resolve_config

        manifest, cfg = resolve_config(dataset, config)
        spec = plan_run(
            request, runs_dir=settings.runs_path(), config=cfg, backend=backend, base_model=model
        )
        d = budget_for_run(
            cfg, rows=method_rows(manifest, cfg), backend=backend, model=model,
            settings=settings,
        )  # fmt: skip
        verdict = "ok" if d.ok else d.reason
        console.print(f"budget: {d.estimate.gpu_hours:.3f} GPU-hours estimated ({verdict})")
        typer.echo(yaml.safe_dump(job_manifest(spec, settings), sort_keys=False))  # raw YAML
        return
    res, run = asyncio.run(_submit(settings, request, config, backend, model))
    budget = (run.spec.get("budget") or {}) if run is not None else {}
    if "gpu_hours" in budget:
        console.print(f"budget: {float(budget['gpu_hours']):.3f} GPU-hours estimated, recorded")
    if res is None:
        why = run.metrics.get("reason") if run is not None else "not launched"
        console.print(f"[bold red]error:[/] {run.status if run else 'refused'}: {why}")
        raise typer.Exit(EXIT_DATA)
    verb = "created" if res.created else "already launched; adopted"
    out.print(f"run {res.run_id}: Kubernetes Job {verb}")


async def _submit(
    settings: Any, request: Any, config: Any, backend: str, model: str | None
) -> tuple[Any, Any]:
    """The coordinator on the system of record (RLSTREAM_POSTGRES_DSN, else embedded): the
    run row and its budget are written before the Job is created."""
    from rlstream.launch.submit import submit_with_store

    return await submit_with_store(settings, request, config, backend, model)
