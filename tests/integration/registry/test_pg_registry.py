"""Registry on real Postgres: ids from weights, promotion, rollback, outbox re-announce."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest
from registry_helpers import RecordingSink, fake_adapter

from rlstream.registry import (
    CandidateRun,
    ChampionMovedError,
    DeployError,
    NoPreviousChampionError,
    NotGatedError,
    Registry,
    UnknownModelError,
    Verdict,
    apply_decision,
    model_id_for,
    record_evaluation,
    settle,
    stored_verdict,
)
from rlstream.storage import Store

pytestmark = pytest.mark.postgres


async def _models(registry: Registry, tmp_path: Path, *names: str) -> list[str]:
    out = []
    for n in names:
        m = await registry.register(fake_adapter(tmp_path, n), agent="support", base_model="base")
        out.append(m.model_id)
    return out


async def test_model_id_is_the_weights_digest_and_register_is_idempotent(
    registry: Registry, tmp_path: Path
) -> None:
    d = fake_adapter(tmp_path, "a")
    first = await registry.register(d, agent="support", dataset_sha256="d" * 64)
    assert first.model_id == model_id_for(d) and len(first.model_id) == 64
    (d / "README.md").write_text("rewritten later: not part of the weights")
    again = await registry.register(d, agent="support")
    assert again == first and again.metadata["dataset_sha256"] == "d" * 64
    other = fake_adapter(tmp_path, "b")
    assert model_id_for(other) != first.model_id
    assert (await registry.resolve(first.model_id[:10])).model_id == first.model_id
    with pytest.raises(UnknownModelError):
        await registry.resolve("0" * 12)


async def test_promote_then_rollback_restores_each_previous_champion(
    registry: Registry, store: Store, sink: RecordingSink, tmp_path: Path
) -> None:
    a, b, c = await _models(registry, tmp_path, "a", "b", "c")
    pa = await registry.promote(a, override=True)  # not evaluated: an operator's promotion
    assert pa.previous_model_id is None and pa.announced_at is not None
    pb = await registry.promote(b, override=True)
    pc = await registry.promote(c, override=True)
    assert (pb.previous_model_id, pc.previous_model_id) == (a, b)
    assert await store.get_alias("support", "champion") == c
    again = await registry.promote(
        c, override=True
    )  # already champion: nothing moves, nothing re-sent
    assert again.promotion_id == pc.promotion_id and len(sink.deployments()) == 3

    r1 = await registry.rollback("support")
    assert (r1.kind, r1.model_id, r1.previous_model_id) == ("rollback", b, c)
    assert await store.get_alias("support", "champion") == b
    r2 = await registry.rollback("support")
    assert r2.model_id == a and await store.get_alias("support", "champion") == a
    with pytest.raises(NoPreviousChampionError):
        await registry.rollback("support")
    events = sink.deployments()
    assert [(e.kind, e.model_id) for e in events] == [
        ("promote", a), ("promote", b), ("promote", c), ("rollback", b), ("rollback", a),
    ]  # fmt: skip
    assert [e.event_id for e in events] == [p.promotion_id for p in (pa, pb, pc, r1, r2)] and len(
        {e.event_id for e in events}
    ) == 5
    # promoting b again after rolling back from it is a new promotion, not the old one
    pb2 = await registry.promote(b, override=True)
    assert pb2.promotion_id != pb.promotion_id and pb2.previous_model_id == a


async def test_concurrent_promotions_of_the_same_decision_move_the_alias_once(
    registry: Registry, store: Store, sink: RecordingSink, tmp_path: Path
) -> None:
    (a,) = await _models(registry, tmp_path, "a")
    results = await asyncio.gather(
        *(registry.promote(a, promotion_id="p-same", override=True) for _ in range(4))
    )
    assert {r.promotion_id for r in results} == {"p-same"}
    assert [p.promotion_id for p in await store.list_promotions("support")] == ["p-same"]


async def test_crash_between_commit_and_announce_is_finished_with_the_same_event_id(
    registry: Registry, store: Store, sink: RecordingSink, tmp_path: Path
) -> None:
    a, b = await _models(registry, tmp_path, "a", "b")
    await registry.promote(a, override=True)
    sink.fail = 1
    with pytest.raises(ConnectionError):
        await registry.promote(b, promotion_id="p-b", override=True)
    # committed (the alias moved) but not announced
    assert await store.get_alias("support", "champion") == b
    pending = await store.unannounced_promotions()
    assert [p.promotion_id for p in pending] == ["p-b"]
    events = await registry.announce_pending()
    assert [e.event_id for e in events] == ["p-b"]
    assert await store.unannounced_promotions() == []
    assert [e.event_id for e in sink.deployments()][-1] == "p-b"


async def test_pending_announcement_for_another_target_is_left_for_it(
    store: Store, sink: RecordingSink, tmp_path: Path
) -> None:
    class Cluster:
        name = "kubernetes"

        def ref(self) -> str:
            return "ml/infer"

        async def deploy(self, **_: object) -> None:
            raise DeployError("api down (test)")

    k8s = Registry(store, target=Cluster(), sink=sink)
    (a,) = await _models(k8s, tmp_path, "a")
    with pytest.raises(DeployError):
        await k8s.promote(a, override=True)
    plain = Registry(store, sink=sink)
    assert await plain.announce_pending() == []  # not its target: left pending
    with pytest.raises(DeployError, match="--target kubernetes"):
        await plain.promote(a, override=True)
    assert len(await store.unannounced_promotions()) == 1


async def test_gate_decision_is_recorded_once_and_promotes(
    registry: Registry, store: Store, sink: RecordingSink, tmp_path: Path
) -> None:
    (base,) = await _models(registry, tmp_path, "base")
    await registry.promote(base, override=True)
    run = CandidateRun(run_id="run-7", agent="support", dataset_id="f" * 64, base_model="base")
    verdict = Verdict(
        decision="promote", reasons=("ci_low 0.2 > 0",), metric="pass_at_1",
        baseline_value=0.0, candidate_value=0.5, delta_mean=0.5, delta_ci_low=0.2,
        delta_ci_high=0.7, report={"k": 4},
    )  # fmt: skip
    weights = fake_adapter(tmp_path, "cand")
    assert await stored_verdict(registry, "run-7") is None
    event = await record_evaluation(
        registry, run, weights, baseline_model=base, baseline_champion=base, verdict=verdict
    )
    assert event.event_id == "eval-run-7" and event.decision == "promote"
    assert (await stored_verdict(registry, "run-7")) is not None
    again = await record_evaluation(
        registry, run, weights, baseline_model=base, baseline_champion=base, verdict=verdict
    )
    assert again.model_dump(exclude={"at"}) == event.model_dump(exclude={"at"})
    assert len(await store.evaluations_for_run("run-7")) == 1
    assert await store.get_alias("support", "challenger") == event.model_id
    p1 = await apply_decision(registry, event)
    p2 = await apply_decision(registry, again)
    assert p1 is not None and p2 is not None and p1.promotion_id == p2.promotion_id
    assert await store.get_alias("support", "champion") == event.model_id
    assert [d.event_id for d in sink.deployments()].count(p1.promotion_id) == 1
    model = await store.get_model(event.model_id)
    assert model is not None and model.metadata["gate"] == "passed"
    assert model.metadata["run_id"] == "run-7" and model.metadata["evaluation_id"] == "eval-run-7"
    lin = await store.lineage_of("model", event.model_id)
    assert lin.ids("evaluation") == {"eval-run-7"} and lin.ids("run") == {"run-7"}
    assert lin.ids("dataset") == {"f" * 64}


async def test_rejected_candidate_is_recorded_as_evaluated_never_as_challenger(
    registry: Registry, store: Store, tmp_path: Path
) -> None:
    good = await record_evaluation(
        registry, CandidateRun(run_id="run-ok", agent="support"), fake_adapter(tmp_path, "ok"),
        baseline_model="base", baseline_champion=None, verdict=Verdict(decision="promote"),
    )  # fmt: skip
    assert await store.get_alias("support", "challenger") == good.model_id
    for n, decision in (("worse", "reject"), ("few", "insufficient")):
        event = await record_evaluation(
            registry, CandidateRun(run_id=f"run-{n}", agent="support"),
            fake_adapter(tmp_path, n), baseline_model="base", baseline_champion=None,
            verdict=Verdict(decision=decision, reasons=("no",)),  # type: ignore[arg-type]
        )  # fmt: skip
        assert await apply_decision(registry, event) is None
        model = await store.get_model(event.model_id)
        assert model is not None and model.metadata["gate"] == {"reject": "rejected"}.get(
            decision, decision
        )
        assert await store.get_evaluation(event.evaluation_id) is not None
        # the challenger is still the promoted candidate; a gated promote refuses
        assert await store.get_alias("support", "challenger") == good.model_id
        with pytest.raises(NotGatedError, match=f"decided '{decision}'"):
            await registry.promote(event.model_id)
    assert await store.get_alias("support", "champion") is None
    challengers = [p for p in await store.list_promotions("support") if p.alias == "challenger"]
    assert [p.model_id for p in challengers] == [good.model_id]


async def test_a_champion_moved_after_the_evaluation_is_not_overwritten(
    registry: Registry, store: Store, sink: RecordingSink, tmp_path: Path
) -> None:
    a, b = await _models(registry, tmp_path, "a", "b")
    await registry.promote(a, override=True)
    event = await record_evaluation(
        registry, CandidateRun(run_id="run-9", agent="support"), fake_adapter(tmp_path, "cand"),
        baseline_model=a, baseline_champion=a, verdict=Verdict(decision="promote"),
    )  # fmt: skip
    await registry.promote(b, override=True, reason="operator")  # the champion moves meanwhile
    with pytest.raises(ChampionMovedError, match="re-evaluation"):
        await registry.promote(event.model_id)
    settled, promotion = await settle(registry, event)
    assert promotion is None and await store.get_alias("support", "champion") == b
    stored = await store.get_evaluation(event.evaluation_id)
    assert stored is not None and stored.baseline_champion == a and stored.refused_at
    assert stored.refusal and f"from {a[:12]} to {b[:12]}" in stored.refusal
    assert settled.reasons[-1] == stored.refusal and settled.decision == "promote"
    assert [d.model_id for d in sink.deployments()] == [a, b]
    # the champion it was compared with is back: the same decision may now promote
    await registry.rollback("support")
    promoted = await apply_decision(registry, event)
    assert promoted is not None and promoted.previous_model_id == a
    assert await store.get_alias("support", "champion") == event.model_id
