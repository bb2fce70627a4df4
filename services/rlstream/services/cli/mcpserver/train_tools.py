"""``train`` and ``evaluate`` as MCP tools: the long ones, with progress and cancellation."""

from __future__ import annotations

import os
from collections.abc import Mapping
from pathlib import Path
from typing import Annotated, Any, Literal

from mcp.server.fastmcp import Context, FastMCP
from pydantic import Field

from rlstream.errors import ConfigError
from rlstream.services.cli.mcpserver.bridge import Reporter, run_blocking
from rlstream.services.cli.mcpserver.models import EvaluateResult, TrainResult
from rlstream.services.cli.mcpserver.state import State

Ctx = Context[Any, Any, Any]
PathArg = Annotated[str, Field(description="a path inside the workspace (relative to its root)")]


def register(server: FastMCP[Any], state: State) -> None:
    ws = state.workspace

    @server.tool(structured_output=True)
    async def train(
        dataset: PathArg,
        ctx: Ctx,
        method: Literal["auto", "sft", "dpo", "grpo", "gspo", "ppo"] = "auto",
        backend: Literal["builtin", "openrlhf", "verl"] = "builtin",
        max_steps: Annotated[int, Field(ge=1)] = 20,
        batch_size: Annotated[int, Field(ge=1)] = 8,
        learning_rate: float | None = None,
        max_length: Annotated[int | None, Field(ge=16)] = None,
        model: Annotated[
            str | None, Field(description="base model folder in the workspace (default: offline")
        ] = None,
        output: Annotated[
            str | None, Field(description="run folder (default: runs/<run id>)")
        ] = None,
        launcher: Literal["local", "kubernetes"] = "local",
        confirm: Annotated[
            bool, Field(description="kubernetes: launch the Job (false: only the plan)")
        ] = False,
        seed: int = 0,
    ) -> TrainResult:
        """Train a LoRA adapter on a curated dataset: here (local, with progress per step;
        cancellable) or as a Kubernetes Job, which needs confirm: true (rlstream train)."""
        from rlstream.training import TrainConfig
        from rlstream.training.data import default_max_length

        folder = ws.path(dataset, what="dataset")
        base = ws.optional(model, what="model")
        config = TrainConfig(
            method=method, max_steps=max_steps, batch_size=batch_size,
            learning_rate=learning_rate, max_length=max_length or default_max_length(folder),
            seed=seed,
        )  # fmt: skip
        if launcher == "kubernetes":
            return await _kubernetes(folder, config, backend, base, confirm)
        target = (
            ws.path(output, what="output") if output else _default_output(folder, config, ws.root)
        )
        return await _local(ws.relative, folder, config, backend, base, target, Reporter(ctx))

    @server.tool(structured_output=True)
    async def evaluate(
        heldout: PathArg,
        candidate_adapter: PathArg,
        reward: Annotated[str, Field(description="reward spec, e.g. gsm8k or tool_calling")],
        ctx: Ctx,
        baseline_adapter: str | None = None,
        k: Annotated[int, Field(ge=1, le=64)] = 4,
        greedy: bool = False,
        max_new_tokens: Annotated[int, Field(ge=1, le=4096)] = 64,
        max_prompts: Annotated[int | None, Field(ge=1)] = None,
        training_dataset: str | None = None,
        min_prompts: Annotated[int, Field(ge=1)] = 30,
        min_effect: float = 0.0,
        metric: Literal["pass_at_1", "mean_reward"] = "pass_at_1",
        seed: int = 0,
        out: str = "eval",
    ) -> EvaluateResult:
        """Baseline vs candidate on held-out prompts, then the promotion gate (rlstream eval).
        The decision is a result, not an error: reject and insufficient come back here."""
        from rlstream.evaluation import (
            EvalRequest,
            GateConfig,
            ModelRef,
            decide,
            run_evaluation,
            write_report,
        )
        from rlstream.training import ensure_base_model

        held = ws.path(heldout, what="heldout")
        cand = ws.path(candidate_adapter, what="candidate_adapter")
        champ = ws.optional(baseline_adapter, what="baseline_adapter")
        trained = ws.optional(training_dataset, what="training_dataset")
        dest = ws.path(out, what="out")
        base = str(ensure_base_model())
        request = EvalRequest(
            baseline=ModelRef.of(base, champ, "baseline"),
            candidate=ModelRef.of(base, cand, "candidate"),
            heldout=held, reward_spec=reward, k=k, greedy=greedy,
            max_new_tokens=max_new_tokens, seed=seed, max_prompts=max_prompts,
            training_dataset=trained,
        )  # fmt: skip
        gate = GateConfig(metric=metric, min_effect=min_effect, min_prompts=min_prompts)
        r = Reporter(ctx)
        seen: dict[str, int] = {}

        def on_sample(model: str, done: int, total: int) -> None:
            seen[model] = done
            finished = sum(seen.values())
            r.report(finished, 2 * total, f"sampling {model} {done}/{total}")

        def work() -> Any:
            report = run_evaluation(request, on_sample)
            decision = decide(report, gate)
            write_report(report, decision, dest, gate=gate)
            return report, decision

        report, decision = await run_blocking(r, work)
        state.evaluation = dest
        d = report.deltas[gate.metric]
        return EvaluateResult(
            decision=decision.decision, reasons=list(decision.reasons), metric=gate.metric,
            baseline_pass_at_1=report.baseline.pass_at_1,
            candidate_pass_at_1=report.candidate.pass_at_1, gain=d.mean, prompts=d.n_prompts,
            report=ws.relative(dest),
        )  # fmt: skip


def _default_output(dataset: Path, config: Any, root: Path) -> Path:
    """``runs/<run id>`` under the workspace: the id every launcher gives this dataset."""
    from rlstream.training import run_id_for
    from rlstream.training.data import resolve_config

    manifest, _ = resolve_config(dataset, config)
    return root / "runs" / run_id_for(manifest.dataset_id)


async def _local(
    show: Any, dataset: Path, config: Any, backend: str, model: Path | None, target: Path,
    r: Reporter,
) -> TrainResult:  # fmt: skip
    os.environ.setdefault("HF_DATASETS_DISABLE_PROGRESS_BARS", "1")
    os.environ.setdefault("HF_HUB_DISABLE_PROGRESS_BARS", "1")
    os.environ.setdefault("TRANSFORMERS_VERBOSITY", "error")
    from rlstream.training import train as run_training

    def on_step(step: int, total: int, logs: Mapping[str, float]) -> None:
        info = "  ".join(f"{k} {logs[k]:.4g}" for k in ("loss", "reward") if k in logs)
        r.report(step, total, f"training step {step}/{total} {info}".strip(), force=True)

    def work() -> Any:
        r.report(0, config.max_steps, "loading model", force=True)
        return run_training(
            dataset, output_dir=target, config=config, backend=backend, base_model=model,
            progress=on_step,
        )  # fmt: skip

    result = await run_blocking(r, work)
    m = result.metrics
    return TrainResult(
        launcher="local", applied=True, run_id=result.run_id, status=result.status,
        method=result.method, backend=result.backend, output_dir=show(Path(result.output_dir)),
        adapter_dir=show(Path(result.adapter_dir)) if result.adapter_dir else None,
        steps=result.steps, first_loss=m.get("first_loss"), last_loss=m.get("last_loss"),
        reason=result.reason,
    )  # fmt: skip


async def _kubernetes(
    dataset: Path, config: Any, backend: str, model: Path | None, confirm: bool
) -> TrainResult:
    """The curator's coordinator, as ``rlstream train --launcher kubernetes``: without
    ``confirm`` only the plan and the budget come back."""
    try:
        from rlstream.launch import LaunchRequest, LaunchSettings, plan_run
        from rlstream.launch.budget import budget_for_run
        from rlstream.launch.k8s_manifest import job_manifest
        from rlstream.launch.submit import submit_with_store
        from rlstream.training.data import method_rows, resolve_config
    except ImportError as exc:
        raise ConfigError(
            f"the kubernetes launcher is not available in this build ({exc})"
        ) from exc
    settings = LaunchSettings()
    request = LaunchRequest.from_dataset(dataset)
    manifest, cfg = resolve_config(dataset, config)
    spec = plan_run(
        request,
        runs_dir=settings.runs_path(),
        config=cfg,
        backend=backend,
        base_model=None if model is None else str(model),
    )
    d = budget_for_run(
        cfg, rows=method_rows(manifest, cfg), backend=backend, model=model, settings=settings
    )
    job = job_manifest(spec, settings)
    meta = job.get("metadata", {})
    where = f"Job {meta.get('name')} in namespace {meta.get('namespace')}"
    plan = (
        f"records run {spec.run_id} with a {d.estimate.gpu_hours:.3g} GPU-hour budget and "
        f"creates Kubernetes {where} ({cfg.method}, {cfg.max_steps} steps)"
    )
    if not d.ok:
        plan += f"; the budget check refuses it: {d.reason}"
    if not confirm:
        return TrainResult(
            launcher="kubernetes", applied=False, run_id=spec.run_id, status="planned",
            method=str(cfg.method), backend=backend, gpu_hours=d.estimate.gpu_hours,
            reason=d.reason, will_change=plan + "; call again with confirm: true",
        )  # fmt: skip
    res, run = await submit_with_store(settings, request, config, backend, model)
    if res is None:
        why = run.metrics.get("reason") if run is not None else "not launched"
        raise ConfigError(f"{run.status if run else 'refused'}: {why}")
    return TrainResult(
        launcher="kubernetes", applied=True, run_id=res.run_id,
        status="created" if res.created else "adopted", method=str(cfg.method),
        backend=backend, gpu_hours=d.estimate.gpu_hours, will_change=plan,
    )  # fmt: skip
