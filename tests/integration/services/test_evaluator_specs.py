"""The evaluator service on real Kafka + Postgres resolves a run's reward spec as training
does: a spec whose options its id cannot carry (set in rewards.yaml) is evaluated through
``RLSTREAM_REWARD_CONFIG``; a spec that cannot be built is a recorded, published, failed
evaluation with the reason, not a batch retried forever.

The evaluation is the library's own (``evaluator_stub:evaluate_library``: spec resolution,
grading, gate, report) with a prose sampler in place of the models, so nothing is loaded.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from evaluator_stub import calls
from helpers import library_evaluator, pg, run_output, succeeded_run

from rlstream.errors import ConfigError
from rlstream.events import EvaluationEvent, topics
from rlstream.grading import RewardSpec, spec_from_id
from rlstream.rewards.config import load_reward_config
from rlstream_testkit.stack import Stack, produce, read_topic, wait_for_count

pytestmark = [pytest.mark.kafka, pytest.mark.postgres, pytest.mark.redis]

AGENT = "support-bot"
REWARDS = f"""agents:
  {AGENT}:
    - {{name: tool_calling, options: {{ordered: false, max_repeats: 2}}}}
"""


def _dataset(tmp: Path, spec: RewardSpec) -> tuple[Path, list[Any]]:
    """Orders logs graded by ``spec`` and curated, a quarter of the task keys held out."""
    from rlstream.curation import CurateOptions, curate, write_dataset
    from rlstream.grading import grade_many
    from rlstream.ingest import IngestOptions, Reject, ingest_paths
    from rlstream.rollout.model import ScoredRollout
    from rlstream.sampledata.orders import write_order_logs

    logs = tmp / "orders.jsonl"
    write_order_logs(logs, seed=3, n_tasks=40, rollouts=3)
    ts = [t for t in ingest_paths([logs], IngestOptions()) if not isinstance(t, Reject)]
    scored = [r for r in grade_many(ts, spec) if isinstance(r, ScoredRollout)]
    write_dataset(curate(scored, CurateOptions(heldout_share=0.25)), tmp / "dataset")
    return tmp / "dataset", scored


def test_a_spec_with_options_is_evaluated_and_an_unbuildable_one_is_a_recorded_failure(
    make_stack: Callable[..., Stack], tmp_path: Path
) -> None:
    from rlstream.lineage import record_release
    from rlstream.storage import Store, upgrade

    rewards = tmp_path / "rewards.yaml"
    rewards.write_text(REWARDS)
    spec = RewardSpec.for_agent(load_reward_config(rewards), AGENT)
    with pytest.raises(ConfigError):  # the id alone cannot rebuild it: its options differ
        spec_from_id(spec.spec_id)
    unbuildable = spec.spec_id.rsplit("#", 1)[0] + "#00000000"  # options no config has
    dataset, scored = _dataset(tmp_path, spec)
    st = make_stack()

    async def seed() -> str:
        await upgrade(st.dsn)
        store = await Store.connect(st.dsn, max_size=2)
        try:
            return (await record_release(store, dataset, scored)).dataset_id
        finally:
            await store.close()

    dataset_id = asyncio.run(seed())
    ev, stub, reports = library_evaluator(st, tmp_path, RLSTREAM_REWARD_CONFIG=str(rewards))
    records = [
        succeeded_run(
            "run-opts", AGENT, dataset_id, spec.spec_id, run_output(tmp_path, "run-opts")
        ),
        succeeded_run("run-bad", AGENT, dataset_id, unbuildable, run_output(tmp_path, "run-bad")),
    ]
    asyncio.run(produce(st.bootstrap, st.topic(topics.TRAINING), records))
    recs = asyncio.run(wait_for_count(st.bootstrap, st.topic(topics.EVALUATIONS), 2, timeout=120))
    assert len(recs) == 2, ev.tail()
    evals = {e.run_id: e for e in (EvaluationEvent.model_validate_json(r.value) for r in recs)}

    opts = evals["run-opts"]  # evaluated: graded with the configured spec, gated, reported
    assert opts.metric == "pass_at_1" and opts.delta_ci_low is not None, opts
    report = json.loads((reports / "run-opts" / "report.json").read_text())
    assert report["reward_spec"] == spec.spec_id and report["heldout"]["prompts"] > 0

    bad = evals["run-bad"]  # a recorded failure with the reason, never evaluated
    assert bad.decision == "reject" and bad.metric is None, bad
    [reason] = bad.reasons
    assert reason.startswith("evaluation failed: reward spec") and "cannot be built" in reason
    assert (calls(stub, "run-opts"), calls(stub, "run-bad")) == (1, 0)
    rows = asyncio.run(pg(st.dsn, "SELECT run_id, decision, report FROM evaluations"))
    by_run = {r["run_id"]: r for r in rows}
    assert set(by_run) == {"run-opts", "run-bad"}
    raw = by_run["run-bad"]["report"]
    stored = (json.loads(raw) if isinstance(raw, str) else raw)["report"]
    assert stored["status"] == "failed" and stored["stage"] == "reward_spec"
    assert by_run["run-bad"]["decision"] == "reject"
    assert asyncio.run(read_topic(st.bootstrap, st.topic(topics.dlq(topics.TRAINING)))) == []
