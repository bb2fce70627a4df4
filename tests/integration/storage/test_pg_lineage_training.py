"""Lineage walks, runs/evaluations/promotions, turn buffers."""

from __future__ import annotations

import asyncio
from datetime import timedelta

import pytest
from storage_helpers import make_rollout, make_transcript

from rlstream.errors import LateTurnError
from rlstream.storage import (
    DatasetRecord,
    EvaluationRecord,
    GroupKey,
    LineageEdge,
    ModelRecord,
    PromotionRecord,
    RunRecord,
    Store,
    UnknownRecordError,
)

pytestmark = pytest.mark.postgres

SPEC = "outcome@1"


async def _released_model(store: Store) -> tuple[list[str], str]:
    """Rollouts -> dataset -> run -> model, with explicit group edges; returns rollout ids."""
    rs = [make_rollout(make_transcript(f"c{i}", offset=100 + i)) for i in range(3)]
    await store.save_rollouts(rs)
    ids = [r.rollout_id for r in rs]
    ds = DatasetRecord(
        dataset_id="d" * 64, agent="support", reward_spec=SPEC, manifest={}, path="/d"
    )
    await store.release_dataset(ds, ids)
    group = GroupKey(agent="support", reward_spec=SPEC, task_key="task-a").label()
    await store.add_lineage(
        [LineageEdge(from_kind="dataset", from_id=ds.dataset_id, to_kind="group", to_id=group)]
        + [LineageEdge(from_kind="group", from_id=group, to_kind="rollout", to_id=i) for i in ids]
    )
    run = RunRecord(
        run_id="run-1", agent="support", backend="builtin", method="sft", status="pending",
        dataset_id=ds.dataset_id, image="img@sha256:1", argv_hash="abc",
    )  # fmt: skip
    assert await store.create_run(run)
    assert await store.register_model(ModelRecord(model_id="m1", agent="support", run_id="run-1"))
    return ids, ds.dataset_id


async def test_lineage_from_model_reaches_conversations_and_offsets(store: Store) -> None:
    ids, ds = await _released_model(store)
    lin = await store.lineage_of("model", "m1")
    assert lin.root.kind == "model" and lin.root.depth == 0
    assert lin.ids("run") == {"run-1"}
    assert lin.ids("dataset") == {ds}
    assert lin.ids("rollout") == set(ids)
    assert lin.ids("conversation") == {"c0", "c1", "c2"}
    assert len(lin.ids("group")) == 1
    assert {(c.conversation_id, c.topic, c.partition, c.offset) for c in lin.conversations} == {
        (f"c{i}", "rlstream.conversations.raw", 1, 100 + i) for i in range(3)
    }
    assert LineageEdge(from_kind="run", from_id="run-1", to_kind="dataset", to_id=ds) in lin.edges


async def test_lineage_up_from_a_conversation_finds_the_model(store: Store) -> None:
    _, ds = await _released_model(store)
    await store.save_rollouts([make_rollout(make_transcript("held-out"))])
    up = await store.lineage_of("conversation", "c1", direction="up")
    assert up.ids("model") == {"m1"} and up.ids("dataset") == {ds}
    clean = await store.lineage_of("conversation", "held-out", direction="up")
    assert clean.ids("dataset") == set()  # held out: no dataset contains it
    assert await store.released_conversations(["c1", "held-out", "ghost"]) == {"c1"}
    assert await store.released_task_keys("support", ["task-a", "other"]) == {"task-a"}
    assert await store.released_task_keys("another-agent", ["task-a"]) == set()


async def test_add_lineage_is_idempotent(store: Store) -> None:
    e = LineageEdge(from_kind="model", from_id="m", to_kind="run", to_id="r")
    assert await store.add_lineage([e, e]) == 1
    assert await store.add_lineage([e]) == 0


async def test_runs_are_created_once_and_updated(store: Store) -> None:
    await _released_model(store)
    dup = RunRecord(run_id="run-1", agent="x", backend="b", method="m", status="pending")
    assert not await store.create_run(dup)  # a retried launch finds the run
    got = await store.update_run("run-1", status="running", metrics={"loss": 1.5})
    got = await store.update_run("run-1", status="succeeded", metrics={"steps": 10})
    assert got.status == "succeeded" and got.metrics == {"loss": 1.5, "steps": 10}
    assert got.agent == "support"
    assert [r.run_id for r in await store.list_runs(status="succeeded")] == ["run-1"]
    with pytest.raises(UnknownRecordError):
        await store.update_run("nope", status="x")


async def test_promotion_moves_alias_records_previous_and_is_idempotent(store: Store) -> None:
    await _released_model(store)
    await store.register_model(ModelRecord(model_id="m0", agent="support"))
    first = await store.promote(
        PromotionRecord(promotion_id="p0", agent="support", model_id="m0", alias="champion")
    )
    assert first.previous_model_id is None
    ev = EvaluationRecord(
        evaluation_id="e1", agent="support", baseline_model="m0", candidate_model="m1",
        decision="promote", report={"ci_low": 0.03}, run_id="run-1",
    )  # fmt: skip
    assert await store.save_evaluation(ev)
    assert not await store.save_evaluation(ev)
    assert await store.get_evaluation("e1") == (await store.get_evaluation("e1"))
    p = PromotionRecord(
        promotion_id="p1", agent="support", model_id="m1", alias="champion", evaluation_id="e1"
    )
    results = await asyncio.gather(store.promote(p), store.promote(p))
    assert results[0] == results[1]
    assert results[0].previous_model_id == "m0"
    assert await store.get_alias("support", "champion") == "m1"
    assert await store.aliases("support") == {"champion": "m1"}
    assert [m.model_id for m in await store.list_models("support")] == ["m1", "m0"]
    assert [x.promotion_id for x in await store.list_promotions("support")] == ["p0", "p1"]
    lin = await store.lineage_of("promotion", "p1")
    assert {"m1"} <= lin.ids("model") and lin.ids("evaluation") == {"e1"}
    assert lin.ids("conversation") == {"c0", "c1", "c2"}
    with pytest.raises(UnknownRecordError):
        await store.promote(
            PromotionRecord(
                promotion_id="p2", agent="support", model_id="ghost", alias="challenger"
            )
        )


async def test_turn_buffers_survive_redelivery_and_refuse_late_turns(store: Store) -> None:
    b = await store.append_turns("conv", [{"role": "user", "content": "hi"}], delta_key="p0@1")
    b = await store.append_turns("conv", [{"role": "assistant", "content": "yo"}], delta_key="p0@2")
    b = await store.append_turns("conv", [{"role": "assistant", "content": "yo"}], delta_key="p0@2")
    assert [t["content"] for t in b.turns] == ["hi", "yo"]  # type: ignore[index,call-overload]
    assert [x.conversation_id for x in await store.open_buffers()] == ["conv"]
    assert await store.idle_buffers(timedelta(hours=1)) == []
    assert [x.conversation_id for x in await store.idle_buffers(timedelta(0))] == ["conv"]
    closed = await store.close_buffer("conv")
    assert closed is not None and closed.closed and len(closed.turns) == 2
    assert (await store.close_buffer("conv")) == closed  # retrying a close returns the turns
    # a redelivered delta after close is a harmless duplicate; a new one is late
    await store.append_turns("conv", [{"role": "assistant", "content": "yo"}], delta_key="p0@2")
    with pytest.raises(LateTurnError):
        await store.append_turns("conv", [{"role": "user", "content": "late"}], delta_key="p0@3")
    assert await store.open_buffers() == []
    assert await store.purge_closed_buffers(timedelta(0)) == 1
    assert await store.get_buffer("conv") is None
