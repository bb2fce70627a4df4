"""The flywheel's lineage on real Postgres: conversations a registered model served (its id
as the transcript's ``model``, as ``rlstream serve`` logs it) are linked to that model, and
a model trained on them leads back to the model that served them."""

from __future__ import annotations

import asyncio
import json
from collections.abc import Callable
from pathlib import Path

import pytest
from registry_helpers import fake_adapter
from typer.testing import CliRunner

from rlstream.curation import CurateOptions, curate, write_dataset
from rlstream.lineage import LineageTree, TreeNode, build_tree, record_release
from rlstream.registry import CandidateRun, Registry, Verdict, record_evaluation
from rlstream.rewards import RewardResult
from rlstream.rollout import ScoredRollout
from rlstream.services.cli.main import app
from rlstream.storage import ModelRecord, Store, upgrade
from rlstream.transcript import Message, SourceRef, Transcript

pytestmark = pytest.mark.postgres

AGENT = "support"


def _served(task: str, i: int, passed: bool, model: str | None) -> ScoredRollout:
    t = Transcript(
        conversation_id=f"served-{task}-{i}",
        messages=(
            Message(role="user", content=f"Refund for order {task}? (try {i})"),
            Message(role="assistant", content=("approved" if passed else "checking") + f" {i}"),
        ),
        task_key=task,
        agent=AGENT,
        model=model,
        redacted=True,
        source=SourceRef(kind="file", file="served.jsonl", line=i + 1),
    )
    score = 1.0 if passed else 0.0
    result = RewardResult(reward="outcome", version="1", score=score, passed=passed, threshold=0.5)
    return ScoredRollout(
        rollout_id=ScoredRollout.make_id(t.conversation_id, "outcome"),
        transcript=t,
        results=(result,),
        score=score,
        passed=passed,
        reward_spec="outcome",
    )


async def _flywheel(dsn: str, tmp_path: Path) -> tuple[str, list[ScoredRollout], LineageTree]:
    """Model X serves; its graded conversations are curated and train model Y."""
    await upgrade(dsn)
    store = await Store.connect(dsn, max_size=4)
    try:
        x = "x" * 8 + "0" * 56
        await store.register_model(ModelRecord(model_id=x, agent=AGENT, path=str(tmp_path)))
        served = [_served(k, i, i < 2, x) for k in ("a", "b") for i in range(4)]
        other = [_served("c", i, i < 2, "someone-else") for i in range(4)]
        await store.save_rollouts(served + other)
        dataset = tmp_path / "ds"
        write_dataset(curate(served, CurateOptions(heldout_share=0.0)), dataset)
        rec = await record_release(store, dataset, served)
        run = CandidateRun(run_id="run-y", agent=AGENT, dataset_id=rec.dataset_id)
        event = await record_evaluation(
            Registry(store),
            run,
            fake_adapter(tmp_path, "adapter-y"),
            baseline_model=x,
            baseline_champion=None,
            verdict=Verdict(decision="promote", metric="pass_at_1", delta_ci_low=0.1),
        )
        tree_x = await build_tree(store, "model", x)
        assert {c["conversation_id"] for c in tree_x.served} == {r.conversation_id for r in served}
        assert all(c["source"].startswith("served.jsonl:") for c in tree_x.served)
        tree_y = await build_tree(store, "model", event.model_id)
        return x, served, tree_y
    finally:
        await store.close()


def test_served_conversations_link_to_the_model_that_served_them(
    postgres_dsn_factory: Callable[[], str], tmp_path: Path
) -> None:
    dsn = postgres_dsn_factory()
    x, served, tree_y = asyncio.run(_flywheel(dsn, tmp_path))
    # Y's lineage: ... -> conversations X served -> X (the model that produced them)
    convs = {r.conversation_id for r in served}
    found: dict[str, set[str]] = {}

    def walk(node: TreeNode) -> None:
        for child in node.children:
            if node.kind == "conversation" and child.kind == "model":
                found.setdefault(node.id, set()).add(child.id)
            walk(child)

    walk(tree_y.root)
    assert found and set(found) <= convs and all(m == {x} for m in found.values())
    assert tree_y.counts["model"] == 2  # Y itself and X, reached through X's conversations
    # `rlstream lineage X` lists what X served; `--json` has every conversation
    res = CliRunner().invoke(app, ["lineage", x[:12], "--dsn", dsn, "--json"])
    assert res.exit_code == 0, res.output
    data = json.loads(res.output)
    assert {c["conversation_id"] for c in data["served"]} == convs
    text = CliRunner().invoke(app, ["lineage", x[:12], "--dsn", dsn], terminal_width=200)
    assert text.exit_code == 0, text.output
    assert "served by this model: 8 conversations" in text.output
    # a conversation another model served is not X's
    assert "served-c-0" not in res.output
