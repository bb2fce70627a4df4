"""``rlstream eval``: baseline vs candidate on held-out prompts, gated, with a report."""

from __future__ import annotations

from pathlib import Path

import typer
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

from rlstream.evaluation import (
    EvalRequest,
    GateConfig,
    ModelRef,
    decide,
    run_evaluation,
    write_report,
)
from rlstream.evaluation.episodes import environment_spec
from rlstream.evaluation.prompts import load_heldout
from rlstream.reporting import write_html_report
from rlstream.services.cli.common import EXIT_DATA, EXIT_INSUFFICIENT, console, friendly_errors

EXAMPLES = """

[bold]Examples[/]

rlstream eval --candidate-adapter run/adapter --heldout dataset/heldout.jsonl --reward tool_calling

rlstream eval --baseline ./models/base --baseline-adapter champion/adapter --candidate-adapter run/adapter --heldout dataset/heldout.jsonl --reward tool_calling --k 4 --out eval/

rlstream eval --candidate-adapter run/adapter --heldout dataset/heldout.jsonl --reward tool_calling --greedy --training-dataset dataset/

rlstream eval --candidate-adapter run/adapter --heldout dataset/heldout.jsonl --reward outcome --environment replay --env-option logs=conversations.jsonl --max-turns 12

With --environment, each held-out task is played as whole episodes in that environment (replay: the logs answer; python: your tool functions over a state, tasks from each held-out row's "task" object; docs/environments.md) and the environment's reward grades them; without it, one generated turn per prompt is graded by the reward spec.

Both models get the same prompts and decoding; every sample is graded by the reward spec with the grader's code. The gate promotes only when a paired one-sided test at 95% (exact McNemar with one greedy sample per prompt, a sign-flip permutation test otherwise) shows a gain above --min-effect over at least --min-prompts held-out prompts, and no guard (tool errors, response length, safety) can have regressed beyond its tolerance (docs/gate.md). Exit code 0 on promote, 1 on reject, 4 when there are too few held-out prompts to decide (insufficient).
"""


@friendly_errors
def eval_command(
    heldout: Path = typer.Option(..., "--heldout", help="heldout.jsonl from a curated dataset"),
    candidate_adapter: Path = typer.Option(..., help="the candidate's LoRA adapter folder"),
    reward: str = typer.Option(..., "--reward", help="reward spec, e.g. tool_calling"),
    baseline: str = typer.Option(
        None, "--baseline", help="base model dir [default: the offline SmolLM2-135M-Instruct]"
    ),
    baseline_adapter: Path = typer.Option(None, help="the champion's adapter, if any"),
    k: int = typer.Option(4, "--k", help="samples per prompt"),
    greedy: bool = typer.Option(False, "--greedy", help="one greedy sample per prompt"),
    temperature: float = typer.Option(0.7, help="sampling temperature"),
    max_new_tokens: int = typer.Option(64, help="generation cap per sample"),
    max_prompts: int = typer.Option(None, help="evaluate the first N held-out prompts"),
    training_dataset: Path = typer.Option(
        None, help="the candidate's training dataset: refuse any held-out key it contains"
    ),
    min_effect: float = typer.Option(0.0, help="the gain the test must show to be exceeded"),
    min_prompts: int = typer.Option(
        30, help="fewer held-out prompts than this: decision insufficient (exit 4)"
    ),
    metric: str = typer.Option("pass_at_1", help="gate metric: pass_at_1 | mean_reward"),
    seed: int = typer.Option(0, help="sampling and bootstrap seed"),
    device: str = typer.Option("auto", help="auto | cpu | cuda"),
    sampler: str = typer.Option("auto", help="auto | hf | vllm"),
    prefix_cache: bool = typer.Option(
        True, help="prefill the prompts' common prefix once per model (same outputs)"
    ),
    out: Path = typer.Option(Path("eval"), "--out", help="report folder"),
    environment: str = typer.Option(
        None, "--environment", help="play whole episodes in this environment: replay | python"
    ),
    env_option: list[str] = typer.Option(
        [], "--env-option", help="KEY=VALUE option of the environment (repeatable)"
    ),
    max_turns: int = typer.Option(8, help="most model turns per episode (with --environment)"),
) -> None:
    """Evaluate a candidate adapter against the baseline on held-out prompts, then gate."""
    from rlstream.training import ensure_base_model

    env = environment_spec(environment, env_option, max_turns) if environment else None
    base = baseline or str(ensure_base_model())
    request = EvalRequest(
        baseline=ModelRef.of(base, baseline_adapter, "baseline"),
        candidate=ModelRef.of(base, candidate_adapter, "candidate"),
        heldout=heldout,
        reward_spec=reward,
        k=k,
        greedy=greedy,
        temperature=temperature,
        max_new_tokens=max_new_tokens,
        seed=seed,
        max_prompts=max_prompts,
        device=device,
        sampler=sampler,
        prefix_cache=prefix_cache,
        training_dataset=training_dataset,
        environment=env,
    )
    gate = GateConfig(metric=metric, min_effect=min_effect, min_prompts=min_prompts)
    n = len(load_heldout(heldout, max_prompts))
    columns = (TextColumn("[bold]{task.description}"), BarColumn(), MofNCompleteColumn())
    with Progress(*columns, TimeElapsedColumn(), console=console, transient=True) as bar:
        tasks = {m: bar.add_task(f"sampling {m}", total=n) for m in ("baseline", "candidate")}
        report = run_evaluation(
            request, lambda m, done, total: bar.update(tasks[m], completed=done)
        )
    decision = decide(report, gate)
    write_report(report, decision, out, gate=gate)
    b, c = report.baseline, report.candidate
    d = report.deltas[gate.metric]
    console.print(
        f"pass@1 {b.pass_at_1:.3f} → {c.pass_at_1:.3f}; {gate.metric} gain {d.mean:+.3f} "
        f"over {d.n_prompts} held-out prompts"
    )
    colour = {"promote": "green", "reject": "red", "insufficient": "yellow"}[decision.decision]
    console.print(f"[bold {colour}]{decision.decision}[/]")
    for r in decision.reasons:
        console.print(f"  {r}")
    console.print(f"report → {out}/report.md")
    console.print(f"report page → {write_html_report(out)}", soft_wrap=True)
    if decision.decision == "reject":
        raise typer.Exit(EXIT_DATA)
    if decision.decision == "insufficient":
        raise typer.Exit(EXIT_INSUFFICIENT)


eval_command.__doc__ = (eval_command.__doc__ or "") + EXAMPLES
