"""``ingest``, ``grade``, ``profile``, ``curate`` and ``estimate_cost`` as MCP tools.

Each calls the same library function as its CLI command, with every path confined to the
workspace (:class:`rlstream.workspace.Workspace`).
"""

from __future__ import annotations

from typing import Annotated, Any, Literal

from mcp.server.fastmcp import Context, FastMCP
from pydantic import Field

from rlstream.services.cli.mcpserver.bridge import Reporter, StageReporter, run_blocking
from rlstream.services.cli.mcpserver.models import (
    CostResult,
    CurateResult,
    GradeResult,
    IngestResult,
    ProfileResult,
)
from rlstream.services.cli.mcpserver.state import State

Ctx = Context[Any, Any, Any]
PathArg = Annotated[str, Field(description="a path inside the workspace (relative to its root)")]


def register(server: FastMCP[Any], state: State) -> None:
    ws = state.workspace

    @server.tool(structured_output=True)
    async def ingest(
        inputs: Annotated[
            list[PathArg], Field(min_length=1, description="log files, folders, globs")
        ],
        out: PathArg,
        ctx: Ctx,
        format: str = "auto",
        redact: bool = True,
    ) -> IngestResult:
        """Read conversation logs in any supported shape into redacted, task-keyed transcripts
        (rlstream ingest)."""
        from rlstream.errors import ConfigError
        from rlstream.pipeline.batch import ingest_file
        from rlstream.services.cli.ingest_options import build_options

        files = ws.files(inputs, what="input")
        dest = ws.path(out, what="out")
        rejects = dest.with_name(dest.name + ".rejects.jsonl")
        options = build_options(format, redact=redact)
        r = Reporter(ctx)
        s = await run_blocking(
            r, lambda: ingest_file(files, dest, rejects, options, StageReporter(r))
        )
        if s.ok == 0:
            raise ConfigError(
                "no transcript was ingested; check --format and the mapping flags "
                f"(first rejects are in {ws.relative(rejects)})"
            )
        return IngestResult(
            transcripts=ws.relative(dest), rejects=ws.relative(rejects), read=s.read, ok=s.ok,
            rejected=s.rejected, duplicates=s.duplicates, by_format=dict(s.by_format),
            rejects_by_reason=dict(s.rejects_by_code),
        )  # fmt: skip

    @server.tool(structured_output=True)
    async def grade(
        input: PathArg,
        out: PathArg,
        ctx: Ctx,
        reward: Annotated[
            str | None, Field(description="e.g. gsm8k or customer_support:2,tool_calling")
        ] = None,
        reward_config: Annotated[
            str | None, Field(description="rewards.yaml in the workspace")
        ] = None,
    ) -> GradeResult:
        """Grade transcripts with offline, versioned rewards (rlstream grade)."""
        from rlstream.grading import SpecResolver
        from rlstream.pipeline.batch import grade_file
        from rlstream.services.cli.common import require_files, require_nonempty

        src = ws.path(input, what="input")
        dest = ws.path(out, what="out")
        config = ws.optional(reward_config, what="reward_config")
        require_files([src])
        specs = SpecResolver.from_options(reward, config)
        require_nonempty(src, "transcripts JSONL (from rlstream ingest)")
        failures = dest.with_name(dest.name + ".failures.jsonl")
        r = Reporter(ctx)
        counts = await run_blocking(
            r, lambda: grade_file(src, dest, failures, specs, StageReporter(r))
        )
        return GradeResult(
            graded=ws.relative(dest), failures=ws.relative(failures), counts=dict(counts)
        )

    @server.tool(structured_output=True)
    async def profile(
        input: PathArg, ctx: Ctx, k_max: Annotated[int | None, Field(ge=1)] = None
    ) -> ProfileResult:
        """Where does RL have signal in these graded rollouts: gradient support, pass@k,
        headroom and a verdict (rlstream profile)."""
        from rlstream.pipeline.batch import profile_file
        from rlstream.services.cli.common import require_files, require_nonempty

        src = ws.path(input, what="input")
        require_files([src])
        require_nonempty(src, "graded rollouts JSONL (from rlstream grade)")
        r = Reporter(ctx)
        p = await run_blocking(r, lambda: profile_file(src, k_max=k_max, stages=StageReporter(r)))
        state.profile = p.to_json_dict()
        scan = p.hack_scan
        flags = [f.name for f in scan.features if f.above_floor] if scan else []
        return ProfileResult(
            rollouts=p.rollouts, groups=p.groups, mixed_groups=p.mixed_groups,
            gradient_support=p.gradient_support,
            gradient_support_unbiased=p.gradient_support_unbiased, pass_at_1=p.pass_at_1,
            pass_at_k=dict(p.pass_at_k), headline_k=p.headline_k, headroom=p.headroom,
            mean_reward=p.mean_reward, verdict=str(p.verdict), method=str(p.method),
            method_reason=p.method_reason, hack_flags=flags,
        )  # fmt: skip

    @server.tool(structured_output=True)
    async def curate(
        input: PathArg,
        out: PathArg,
        ctx: Ctx,
        band: tuple[float, float] = (0.2, 0.8),
        min_group_size: Annotated[int, Field(ge=1)] = 2,
        hack_scan: Literal["report", "reject", "off"] = "report",
        heldout_share: Annotated[float | None, Field(ge=0.0, le=1.0)] = None,
        granularity: Literal["auto", "conversation", "turn"] = "auto",
    ) -> CurateResult:
        """Curate graded rollouts into a reproducible GRPO / DPO / SFT dataset with a
        held-out split (rlstream curate)."""
        from rlstream.curation import CurateOptions
        from rlstream.pipeline.batch import curate_file
        from rlstream.services.cli.common import require_files, require_nonempty
        from rlstream.settings import load_settings

        src = ws.path(input, what="input")
        dest = ws.path(out, what="out")
        require_files([src])
        require_nonempty(src, "graded rollouts JSONL (from rlstream grade)")
        options = CurateOptions(
            band=band,
            min_group_size=min_group_size,
            hack_scan=hack_scan,
            heldout_share=load_settings().heldout_share if heldout_share is None else heldout_share,
            granularity=granularity,
        )
        r = Reporter(ctx)
        _, manifest = await run_blocking(
            r, lambda: curate_file(src, dest, options, StageReporter(r))
        )
        state.dataset = dest
        held = dest / "heldout.jsonl"
        return CurateResult(
            dataset=ws.relative(dest),
            dataset_id=manifest.dataset_id,
            method=str(manifest.method),
            files={k: v.rows for k, v in sorted(manifest.files.items())},
            heldout=ws.relative(held) if held.is_file() else None,
        )

    @server.tool(structured_output=True)
    async def estimate_cost(
        dataset: PathArg,
        method: Literal["auto", "sft", "dpo", "grpo", "gspo", "ppo"] = "auto",
        backend: Literal["builtin", "openrlhf", "verl"] = "builtin",
        max_steps: Annotated[int, Field(ge=1)] = 20,
        batch_size: Annotated[int, Field(ge=1)] = 8,
    ) -> CostResult:
        """The GPU-hour estimate for training on a dataset and the budget check the
        Kubernetes launcher applies (RLSTREAM_BUDGET_*); nothing is launched."""
        from rlstream.launch import LaunchSettings
        from rlstream.launch.budget import budget_for_run
        from rlstream.training import TrainConfig
        from rlstream.training.data import default_max_length, method_rows, resolve_config

        folder = ws.path(dataset, what="dataset")
        config = TrainConfig(
            method=method, max_steps=max_steps, batch_size=batch_size,
            max_length=default_max_length(folder),
        )  # fmt: skip
        manifest, cfg = resolve_config(folder, config)
        settings = LaunchSettings()
        rows = method_rows(manifest, cfg)
        spent, unread = await _spent_today(settings)
        d = budget_for_run(
            cfg, rows=rows, backend=backend, model=None, settings=settings, spent_today=spent
        )
        if unread is not None:  # fail closed: the launcher could not check it either
            d = d.model_copy(update={"ok": False, "reason": unread})
        e = d.estimate
        return CostResult(
            method=e.method, backend=backend, rows=rows, steps=e.steps, tokens=e.tokens,
            params=e.params, gpu_hours=e.gpu_hours, wall_hours=e.wall_hours, gpus=e.gpus,
            budget_ok=d.ok, budget_reason=d.reason,
            budget_gpu_hours_per_run=settings.budget_gpu_hours_per_run,
            budget_gpu_hours_per_day=settings.budget_gpu_hours_per_day,
            spent_today_gpu_hours=d.spent_today,
        )  # fmt: skip


async def _spent_today(settings: Any) -> tuple[float, str | None]:
    """The day's GPU-hours from the runs table when a system of record is configured
    (``RLSTREAM_POSTGRES_DSN``), as the launcher counts them; 0 without one (the CLI's
    embedded store holds only local runs, which spend no budget). An unreachable store
    gives 0 and the reason, which fails the budget check closed."""
    if settings.postgres_dsn is None:
        return 0.0, None
    from rlstream.errors import TransientError
    from rlstream.launch.runs import RunTracker
    from rlstream.storage import Store
    from rlstream.storage.embedded import resolve_dsn

    try:
        store = await Store.connect(resolve_dsn(settings), max_size=1)
    except TransientError as exc:
        return 0.0, f"today's spend is unknown ({exc}); the launcher would refuse too"
    try:
        spent = await RunTracker(store, publish=_no_publish, launcher="kubernetes").spent_today()
        return spent, None
    finally:
        await store.close()


async def _no_publish(event: Any) -> None:
    """Reading the spend publishes nothing."""
