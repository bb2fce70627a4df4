"""Lineage on real Postgres from a batch (demo) dataset: model -> evaluation -> run ->
dataset -> groups -> rollouts -> conversations with their file:line sources."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from registry_helpers import batch_demo, fake_adapter

from rlstream.curation import Manifest
from rlstream.lineage import build_tree, record_release
from rlstream.registry import CandidateRun, Registry, Verdict, record_evaluation
from rlstream.storage import Store

pytestmark = pytest.mark.postgres


@pytest.fixture(scope="module")
def demo_out(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return batch_demo(tmp_path_factory.mktemp("demo"))


async def test_lineage_from_model_reaches_demo_conversations_and_their_lines(
    store: Store, registry: Registry, demo_out: Path, tmp_path: Path
) -> None:
    dataset = demo_out / "dataset"
    manifest = Manifest.model_validate_json((dataset / "manifest.json").read_bytes())
    rec = await record_release(store, dataset, [demo_out / "scored.jsonl"])
    again = await record_release(store, dataset, [demo_out / "scored.jsonl"])  # idempotent
    assert rec.dataset_id == again.dataset_id == manifest.dataset_id
    run = CandidateRun(run_id="run-demo", agent=rec.agent, dataset_id=rec.dataset_id)
    event = await record_evaluation(
        registry,
        run,
        fake_adapter(tmp_path, "adapter"),
        baseline_model="SmolLM2-135M-Instruct",
        baseline_champion=None,
        verdict=Verdict(decision="promote", metric="pass_at_1", delta_ci_low=0.1),
    )
    tree = await build_tree(store, "model", event.model_id)

    root = tree.root
    assert root.kind == "model" and root.id == event.model_id
    (evaluation,) = [c for c in root.children if c.kind == "evaluation"]
    assert evaluation.details["decision"] == "promote"
    (run_node,) = evaluation.children
    assert run_node.kind == "run" and run_node.id == "run-demo"
    (ds_node,) = run_node.children
    assert ds_node.kind == "dataset" and ds_node.details["sha256"] == manifest.dataset_id
    groups = ds_node.children
    assert groups and all(g.kind == "group" for g in groups)
    rollouts = [r for g in groups for r in g.children]
    expected = {rid for e in manifest.lineage for rid in e.rollout_ids}
    assert {r.id for r in rollouts} == expected
    convs = [c for r in rollouts for c in r.children]
    assert {c.id for c in convs} == {cid for e in manifest.lineage for cid in e.conversation_ids}
    assert tree.counts["conversation"] == len({c.id for c in convs})
    # every source is a demo log file; in the JSONL ones, that line holds the conversation
    checked = 0
    for c in convs:
        file, line = str(c.details["source"]).rsplit(":", 1)
        assert Path(file).parent == demo_out.parent / "logs" and int(line) >= 0
        if file.endswith(".jsonl"):
            text = Path(file).read_text().splitlines()[int(line) - 1]
            assert c.id in text, (c.id, file, line)
            checked += 1
    assert checked > 10
    dumped = json.loads(tree.model_dump_json())
    assert dumped["root"]["children"][0]["kind"] == "evaluation"
