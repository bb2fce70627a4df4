"""A world for the erasure tests: one user's conversations among others', ingested
(redacted, keyed), graded, released by the curator's own sealing, trained on by a run whose
model is champion, with Redis state and a raw turn buffer (a uniquely named module)."""

from __future__ import annotations

import hashlib
from pathlib import Path
from typing import Any

from rlstream.curation import CurateOptions
from rlstream.curation.heldout import keys_rule
from rlstream.erasure import Eraser, ErasureSettings
from rlstream.grading import grade_many
from rlstream.grading.spec import RewardSpec
from rlstream.ingest import IngestOptions, Ingestor
from rlstream.rollout import ScoredRollout
from rlstream.services.curator.seal import seal_dataset
from rlstream.storage import (
    DatasetRecord,
    ErasureOps,
    LineageEdge,
    ModelRecord,
    PromotionRecord,
    RedisState,
    RunRecord,
    Store,
    rollout_group,
)
from rlstream.transcript import SourceRef
from rlstream_testkit.erasure_probe import USER_CID, other_conversation, user_conversation

AGENT = "support-bot"
PATTERN = (True, False, True, False, True)


def records() -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    """(user's, others'): four shared tasks (one user conversation each among four others),
    a task only the user had, and a held-out task only the user had."""
    user: list[dict[str, Any]] = []
    others: list[dict[str, Any]] = []
    n = 0
    for t in range(4):
        user.append(user_conversation(t, f"shared-{t}", PATTERN[t]))
        for j in range(4):
            others.append(other_conversation(n, f"shared-{t}", PATTERN[j + 1]))
            n += 1
    user += [user_conversation(10 + i, "solo", r) for i, r in enumerate((True, False, True))]
    user += [user_conversation(20 + i, "held", r) for i, r in enumerate((True, False))]
    others += [other_conversation(100 + i, "other", r) for i, r in enumerate(PATTERN)]
    return user, others


async def release(store: Store, pending: list[ScoredRollout], root: Path, held: set[str]) -> str:
    """What the curator does: seal the files, record the release and its lineage edges."""
    sealed = seal_dataset(pending, root, AGENT, CurateOptions(), keys_rule(held))
    assert sealed is not None
    kept = {r.rollout_id: r for r in pending if r.rollout_id in set(sealed.rollout_ids)}
    ids = sorted(kept)
    record = DatasetRecord(
        dataset_id=sealed.dataset_id, agent=AGENT, reward_spec=pending[0].reward_spec,
        manifest={"release": {"files": sealed.files, "manifest": sealed.manifest}},
        path=str(sealed.path), n_rollouts=len(ids),
    )  # fmt: skip
    await store.release_dataset(record, ids)
    edges = []
    for rid in ids:
        label = rollout_group(kept[rid]).label()
        edges += [
            LineageEdge(from_kind="dataset", from_id=sealed.dataset_id, to_kind="group", to_id=label),
            LineageEdge(from_kind="group", from_id=label, to_kind="rollout", to_id=rid),
            LineageEdge(from_kind="rollout", from_id=rid, to_kind="conversation",
                        to_id=kept[rid].conversation_id),
        ]  # fmt: skip
    await store.add_lineage(edges)
    return sealed.dataset_id


async def world(store: Store, state: RedisState, data: Path) -> dict[str, Any]:
    user, others = records()
    ing = Ingestor(IngestOptions())
    src = [SourceRef(kind="kafka", topic="raw", partition=0, offset=i) for i in range(100)]
    ts = [ing.process(r, src[i]) for i, r in enumerate(user + others)]
    spec = RewardSpec.parse("outcome")
    rollouts = [r for r in grade_many(ts, spec) if isinstance(r, ScoredRollout)]
    assert len(rollouts) == len(ts)
    await store.save_rollouts(rollouts)
    await state.bump_groups(rollouts)
    await state.mark_seen([state.idem_key("transcript", t.conversation_id) for t in ts])
    await state.mark_seen([state.idem_key("scored", r.rollout_id) for r in rollouts])
    await state.neardup.add(AGENT, ts[0].conversation_id, 0x1234_5678_9ABC_DEF0)
    await store.hold_out(AGENT, spec.spec_id, ["task_id:held"], 0.1)
    pending = await store.pending_rollouts(AGENT, spec.spec_id)
    dataset_id = await release(store, pending, data / "datasets", {"task_id:held"})
    run_dir = data / "runs" / "run-1"
    (run_dir / "work").mkdir(parents=True)
    grpo = Path(data / "datasets" / AGENT / dataset_id / "grpo.jsonl").read_bytes()
    (run_dir / "work" / "prompts.jsonl").write_bytes(grpo)  # a backend's converted copy
    (run_dir / "adapter").mkdir()
    (run_dir / "adapter" / "adapter_model.safetensors").write_bytes(b"weights")
    await store.create_run(
        RunRecord(run_id="run-1", agent=AGENT, backend="builtin", method="grpo",
                  status="succeeded", dataset_id=dataset_id, artifact_path=str(run_dir))
    )  # fmt: skip
    model = hashlib.sha256(b"m1").hexdigest()
    await store.register_model(
        ModelRecord(model_id=model, agent=AGENT, run_id="run-1", path=str(run_dir / "adapter"))
    )
    await store.promote(PromotionRecord(promotion_id="p1", agent=AGENT, model_id=model,
                                        alias="champion"))  # fmt: skip
    # a conversation still streaming in: raw deltas in a turn buffer
    delta = {"turn": 0, "metadata": {"customer_id": "C-20931"}, "messages": []}
    await store.append_turns(
        USER_CID.format(i=99),
        [{"conversation_id": USER_CID.format(i=99), "turn": 0, "delta": delta,
          "received_at": 0.0, "source": {"kind": "inline"}}],
        delta_key="0",
    )  # fmt: skip
    n_user = len(user)
    user_ids = {t.conversation_id for t in ts[:n_user]}
    return {
        "dataset_id": dataset_id,
        "model": model,
        "spec": spec.spec_id,
        "user_cids": user_ids,
        "user_rids": {r.rollout_id for r in rollouts if r.conversation_id in user_ids},
        "others": len(others),
        "user_rollouts": [r for r in rollouts if r.conversation_id in user_ids],
    }


def make_eraser(store: Store, state: RedisState, data: Path, **policy: str) -> Eraser:
    settings = ErasureSettings(data_dir=data, **policy)  # type: ignore[arg-type]
    return Eraser(
        ErasureOps(store.pool), settings, dataset_roots=[data / "datasets"],
        run_roots=[data / "runs"], redis=state,
    )  # fmt: skip
