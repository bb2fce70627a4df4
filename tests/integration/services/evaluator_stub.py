"""A stand-in evaluation for the evaluator service tests (``RLSTREAM_EVALUATE_FUNCTION=
evaluator_stub:evaluate``): rlstream.evaluation (eval-gate) runs real generations and is
tested on its own; here what matters is how often the service calls it and what it does
with the decision. Each call leaves a marker file; ``STUB_SLEEP`` makes it slow."""

from __future__ import annotations

import os
import time
from pathlib import Path
from typing import Any

from rlstream.registry import Verdict
from rlstream.services.evaluator.evaluate import EvalJob


def evaluate(job: EvalJob) -> Verdict:
    d = Path(os.environ["STUB_DIR"])
    d.mkdir(parents=True, exist_ok=True)
    (d / f"call-{job.run_id}-{os.getpid()}-{time.time_ns()}.json").write_text(job.model_dump_json())
    time.sleep(float(os.environ.get("STUB_SLEEP", "0")))  # blocking, like a real evaluation
    reject = "reject" in job.run_id
    if "insufficient" in job.run_id:
        return Verdict(decision="insufficient", reasons=("stub: 3 prompts < 30",))
    return Verdict(
        decision="reject" if reject else "promote",
        reasons=("stub: ci_low <= 0",) if reject else ("stub: ci_low 0.1 > 0",),
        metric=job.metric,
        baseline_value=0.0,
        candidate_value=0.0 if reject else 0.5,
        delta_mean=0.0 if reject else 0.5,
        delta_ci_low=-0.1 if reject else 0.1,
        delta_ci_high=0.1 if reject else 0.9,
    )


def evaluate_moving_champion(job: EvalJob) -> Verdict:
    """``evaluate``, during which an operator installs another champion (raw SQL, so the
    same stub serves any schema version): ``champion-moved`` of the job's agent."""
    import asyncio

    import asyncpg

    async def move() -> None:
        conn = await asyncpg.connect(os.environ["RLSTREAM_POSTGRES_DSN"])
        try:
            await conn.execute(
                "INSERT INTO models (model_id, agent, metadata) VALUES ('champion-moved', $1,"
                " '{}') ON CONFLICT DO NOTHING",
                job.agent,
            )
            await conn.execute(
                "INSERT INTO model_aliases (agent, alias, model_id) VALUES ($1, 'champion',"
                " 'champion-moved') ON CONFLICT (agent, alias) DO UPDATE SET model_id ="
                " excluded.model_id",
                job.agent,
            )
        finally:
            await conn.close()

    verdict = evaluate(job)
    asyncio.run(move())  # this worker thread runs no event loop of its own
    return verdict


def calls(stub_dir: Path, run_id: str) -> int:
    return len(list(stub_dir.glob(f"call-{run_id}-*.json")))


class _Prose:
    """A sampler that answers every prompt with prose and loads no model."""

    name = "prose"

    def generate(self, prompts: Any, decoding: Any, advance: Any = None) -> list[list[Any]]:
        from rlstream.evaluation.sampler import Generation

        out = [[Generation("Sure, let me look into that.", 8, True)] * decoding.samples] * len(
            prompts
        )
        if advance is not None:
            advance(len(prompts))
        return out

    def close(self) -> None:
        pass


def evaluate_library(job: EvalJob) -> Verdict:
    """The service's real evaluation (``rlstream.evaluation``: spec resolution, grading,
    gate, report) with the prose sampler in place of the models, so nothing is loaded."""
    import rlstream.evaluation.run as run
    from rlstream.services.evaluator.evaluate import evaluate_with_library

    run.make_sampler = lambda *a, **kw: _Prose()  # type: ignore[attr-defined]
    d = Path(os.environ["STUB_DIR"])
    d.mkdir(parents=True, exist_ok=True)
    (d / f"call-{job.run_id}-{os.getpid()}-{time.time_ns()}.json").write_text(job.model_dump_json())
    return evaluate_with_library(job)
