"""One held-out contract (issue 17 item 2), on real Kafka + Postgres with the evaluator
service: the split is per agent, so a reward version bump keeps it and the evaluator still
decides, on the agent's accumulated held-out set; a candidate that trained on a held-out
prompt is a recorded rejection listing the keys, never a dead letter.

The evaluation is the library's own (``evaluator_stub:evaluate_library``) with a prose
sampler in place of the models, so nothing is loaded.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from evaluator_stub import calls
from helpers import library_evaluator, run_output, succeeded_run

from rlstream.events import EvaluationEvent, topics
from rlstream.grading import RewardSpec
from rlstream_testkit.stack import Stack, produce, read_topic, wait_for_count

pytestmark = [pytest.mark.kafka, pytest.mark.postgres, pytest.mark.redis]

SHARE = 0.25


def _graded(tmp: Path, spec: RewardSpec) -> list[Any]:
    from rlstream.grading import grade_many
    from rlstream.ingest import IngestOptions, Reject, ingest_paths
    from rlstream.rollout.model import ScoredRollout
    from rlstream.sampledata.orders import write_order_logs

    logs = tmp / "orders.jsonl"
    if not logs.exists():
        write_order_logs(logs, seed=5, n_tasks=160, rollouts=3)
    ts = [t for t in ingest_paths([logs], IngestOptions()) if not isinstance(t, Reject)]
    return [r for r in grade_many(ts, spec) if isinstance(r, ScoredRollout)]


def test_a_reward_version_bump_keeps_the_split_and_the_evaluator_still_decides(
    make_stack: Callable[..., Stack], tmp_path: Path
) -> None:
    from rlstream.curation import CurateOptions, Manifest, curate, write_dataset
    from rlstream.lineage import record_release
    from rlstream.storage import DatasetRecord, Store, upgrade

    v1, v2 = RewardSpec.parse("tool_calling"), RewardSpec.parse("tool_calling:2")
    assert v1.spec_id != v2.spec_id
    st = make_stack()
    graded = {s.spec_id: _graded(tmp_path, s) for s in (v1, v2)}
    agent = graded[v1.spec_id][0].transcript.agent or ""
    dirs: dict[str, Path] = {}
    for i, spec in enumerate((v1, v2)):  # a release per reward version, split per agent
        dirs[spec.spec_id] = tmp_path / f"ds-{i}"
        opts = CurateOptions(heldout_share=SHARE)
        write_dataset(curate(graded[spec.spec_id], opts), dirs[spec.spec_id])
    # a candidate whose dataset trained on everything, held-out keys included
    leaky = tmp_path / "ds-leaky"
    write_dataset(curate(graded[v2.spec_id], CurateOptions(heldout_share=0.0)), leaky)

    async def seed() -> dict[str, str]:
        await upgrade(st.dsn)
        store = await Store.connect(st.dsn, max_size=2)
        try:
            ids = {}
            for spec in (v1, v2):
                d = dirs[spec.spec_id]
                rec = await record_release(store, d, graded[spec.spec_id])
                held = Manifest.model_validate_json((d / "manifest.json").read_bytes())
                kept = await store.hold_out(agent, spec.spec_id, held.heldout_task_keys, SHARE)
                assert kept == set(held.heldout_task_keys)  # v2's release refused nothing
                ids[spec.spec_id] = rec.dataset_id
            m = Manifest.model_validate_json((leaky / "manifest.json").read_bytes())
            await store.save_dataset(  # recorded, never released: Postgres refuses that
                DatasetRecord(
                    dataset_id=m.dataset_id,
                    agent=agent,
                    reward_spec=v2.spec_id,
                    manifest={},
                    path=str(leaky),
                )
            )
            ids["leaky"] = m.dataset_id
            return ids
        finally:
            await store.close()

    ids = asyncio.run(seed())
    held = [
        set(Manifest.model_validate_json((dirs[s.spec_id] / "manifest.json").read_bytes())
            .heldout_task_keys)
        for s in (v1, v2)
    ]  # fmt: skip
    assert held[0] and held[0] == held[1]  # the bump did not re-draw the split

    ev, stub, reports = library_evaluator(st, tmp_path)
    records = [
        succeeded_run("run-v2", agent, ids[v2.spec_id], v2.spec_id, run_output(tmp_path, "run-v2")),
        succeeded_run(
            "run-leaky", agent, ids["leaky"], v2.spec_id, run_output(tmp_path, "run-leaky")
        ),
    ]
    asyncio.run(produce(st.bootstrap, st.topic(topics.TRAINING), records))
    recs = asyncio.run(wait_for_count(st.bootstrap, st.topic(topics.EVALUATIONS), 2, timeout=120))
    assert len(recs) == 2, ev.tail()
    evals = {e.run_id: e for e in (EvaluationEvent.model_validate_json(r.value) for r in recs)}

    v2_eval = evals["run-v2"]  # evaluated and decided, on the accumulated set
    assert v2_eval.metric == "pass_at_1", v2_eval
    report = json.loads((reports / "run-v2" / "report.json").read_text())
    assert report["heldout"]["prompts"] == len(held[0])
    assert report["heldout"]["by_release"] == {ids[v1.spec_id]: len(held[0])}  # first release

    leak = evals["run-leaky"]  # a recorded, explained rejection; never evaluated
    assert leak.decision == "reject" and leak.reasons[0].startswith("held-out leak"), leak
    assert sorted(held[0])[0] in leak.reasons[0]
    assert (calls(stub, "run-v2"), calls(stub, "run-leaky")) == (1, 0)
    assert asyncio.run(read_topic(st.bootstrap, st.topic(topics.dlq(topics.TRAINING)))) == []
