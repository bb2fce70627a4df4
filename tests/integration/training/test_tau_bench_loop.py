"""The loop on agent trajectories nobody on this project wrote (tau-bench airline, MIT; a
32-conversation slice of 8 tasks): ingest -> per-turn scores -> turn-level curation ->
training on the turn rows -> held-out next-action evaluation -> a gate decision with its
CI, then the environment form on the same tasks (whole episodes replayed from the logs). The full 200-conversation figures are in docs/curation.md; this keeps the loop honest
in CI at a few minutes."""

from __future__ import annotations

import os

os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")

from pathlib import Path

import orjson
import pytest
from typer.testing import CliRunner

from rlstream.curation import CurateOptions, verify_dataset
from rlstream.evaluation import EvalRequest, GateConfig, ModelRef, decide, run_evaluation
from rlstream.evaluation.models import EnvironmentSpec
from rlstream.grading import SpecResolver
from rlstream.ingest import IngestOptions
from rlstream.jsonl import read_scored
from rlstream.pipeline.batch import run_batch
from rlstream.services.cli.main import app

pytestmark = [pytest.mark.train, pytest.mark.slow]

SLICE = Path(__file__).parents[2] / "golden" / "tau_bench" / "gpt-4o-airline.mixed8.jsonl"


@pytest.mark.timeout(1800)
def test_tau_bench_slice_reaches_a_gate_decision_on_next_actions(
    tmp_path: Path, base_model: Path
) -> None:
    out = tmp_path / "out"
    run_batch(
        [([SLICE], IngestOptions())],
        SpecResolver.from_options("outcome", None),
        out,
        CurateOptions(heldout_share=0.25),
    )
    scored = list(read_scored(out / "scored.jsonl"))
    assert len(scored) == 32 and all(r.turns for r in scored)
    assert any(t.source == "divergence" for r in scored for t in r.turns)
    manifest = verify_dataset(out / "dataset")
    assert manifest.granularity == "turn" and manifest.method == "dpo"
    assert manifest.files["dpo.jsonl"].rows > 0 and manifest.files["sft.jsonl"].rows > 0
    assert manifest.heldout_task_keys

    run = tmp_path / "run"
    res = CliRunner().invoke(app, [
        "train", "--dataset", str(out / "dataset"), "--method", "sft", "--max-steps", "1",
        "--batch-size", "1", "--model", str(base_model), "--output", str(run),
    ])  # fmt: skip
    assert res.exit_code == 0, res.output
    metrics = orjson.loads((run / "metrics.json").read_bytes())
    assert metrics["steps"] == 1 and metrics["row_fit"]["too_long"] == 0, metrics

    base = ModelRef.of(base_model, None, "baseline")

    def request(**form: object) -> EvalRequest:
        """Base vs the adapter on the first 2 held-out prompts, greedy, 24 new tokens."""
        return EvalRequest.model_validate({
            "baseline": base, "candidate": ModelRef.of(base_model, run / "adapter", "candidate"),
            "heldout": out / "dataset" / "heldout.jsonl", "greedy": True, "max_new_tokens": 24,
            "max_prompts": 2, "device": "cpu", "sampler": "hf",
            "training_dataset": out / "dataset", **form,
        })  # fmt: skip

    report = run_evaluation(request(reward_spec="tool_calling"))
    # next-action prompts: each ends after earlier assistant turns, graded on the new one
    assert report.heldout["form"] == "next_action" and report.heldout["prompts"] == 2
    decision = decide(report, GateConfig(min_prompts=2))
    assert decision.decision in {"promote", "reject"}, decision.reasons
    assert report.delta.ci_low <= report.delta.mean <= report.delta.ci_high

    # the environment form on the same held-out tasks: whole episodes replayed from the logs
    # (the logged user turns and tool results answer). A 135M model rarely makes the call
    # the logs made at the opening, so most episodes leave the log: ungraded, and the gate
    # refuses to decide on them rather than counting them as failures.
    env = EnvironmentSpec(
        name="replay", options={"logs": str(SLICE), "reward": "outcome"}, max_turns=2
    )
    whole = run_evaluation(request(reward_spec="outcome", environment=env))
    # one episode per held-out task (the 2 next-action prompts may share one)
    tasks = len({p.task_key for p in whole.prompts})
    assert whole.heldout["form"] == "environment" and whole.heldout["prompts"] == tasks
    for who in ("baseline", "candidate"):
        assert sum(whole.heldout["episodes"][who].values()) == tasks, whole.heldout  # type: ignore[index]
    ungraded = whole.baseline.ungraded + whole.candidate.ungraded
    verdict = decide(whole, GateConfig(min_prompts=1))
    if ungraded:
        assert verdict.decision == "reject"
        assert any("could not be graded" in r for r in verdict.reasons)
