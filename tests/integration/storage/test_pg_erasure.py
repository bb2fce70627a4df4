"""Erasure on a real Postgres and Redis: one user's conversations, ingested (redacted, keyed),
graded, released in a curated dataset, trained on by a run whose model is champion, are
erased; then every table, every Redis key and every file under the data folders is
searched for the user's values, stand-ins and ids: nothing; the record, the new dataset
revision, the affected run and model are there, and nobody else lost a row."""

from __future__ import annotations

import hashlib
import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from rlstream.curation import CurateOptions, verify_dataset
from rlstream.curation.heldout import keys_rule
from rlstream.erasure import Eraser, ErasureSettings, Selector
from rlstream.grading import grade_many
from rlstream.grading.spec import RewardSpec
from rlstream.ingest import IngestOptions, Ingestor
from rlstream.lineage import build_tree
from rlstream.pii import keys
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
from rlstream_testkit.erasure_probe import (
    USER_CID,
    needles,
    other_conversation,
    scan_files,
    scan_postgres,
    scan_redis,
    user_conversation,
)
from rlstream_testkit.stack import TEST_PII_KEY

pytestmark = [pytest.mark.postgres, pytest.mark.redis]

AGENT = "support-bot"
PATTERN = (True, False, True, False, True)


@pytest.fixture(autouse=True)
def _keyed() -> Iterator[None]:
    keys.configure(keys.Pseudonymiser(TEST_PII_KEY.encode()))
    yield
    keys.configure(None)


def _records() -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
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


async def _release(store: Store, pending: list[ScoredRollout], root: Path, held: set[str]) -> str:
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


async def _world(store: Store, state: RedisState, data: Path) -> dict[str, Any]:
    user, others = _records()
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
    dataset_id = await _release(store, pending, data / "datasets", {"task_id:held"})
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


def _eraser(store: Store, state: RedisState, data: Path, **policy: str) -> Eraser:
    settings = ErasureSettings(data_dir=data, **policy)  # type: ignore[arg-type]
    return Eraser(
        ErasureOps(store.pool), settings, dataset_roots=[data / "datasets"],
        run_roots=[data / "runs"], redis=state,
    )  # fmt: skip


async def _count(store: Store, sql: str) -> int:
    return int(await store.pool.fetchval(sql))


async def test_erase_one_user_leaves_no_trace_and_lists_what_trained_on_it(
    store: Store, state: RedisState, migrated_dsn: str, tmp_path: Path
) -> None:
    w = await _world(store, state, tmp_path)
    eraser = _eraser(store, state, tmp_path)
    before_groups = {
        (r["task_key"]): r["n"] for r in await store.pool.fetch("SELECT task_key, n FROM groups")
    }
    dry = await eraser.run(Selector(kind="user_key", value="C-20931"), dry_run=True)
    assert await _count(store, "SELECT count(*) FROM transcripts") == w["others"] + 9
    report = await eraser.run(Selector(kind="user_key", value="C-20931"))
    assert report.status == "done", "\n".join(report.lines())
    c = report.counts
    assert (c["transcripts"], c["rollouts"], c["turn_buffers"]) == (9, 9, 1)
    assert {k: dry.counts[k] for k in ("transcripts", "rollouts", "turn_buffers")} == {
        k: c[k] for k in ("transcripts", "rollouts", "turn_buffers")
    }
    assert c["released_rollouts"] == dry.counts["released_rollouts"] > 0
    # nobody else lost anything; the user's groups went down by their rollouts
    assert await _count(store, "SELECT count(*) FROM transcripts") == w["others"]
    assert await _count(store, "SELECT count(*) FROM rollouts") == w["others"]
    after = {
        r["task_key"]: r["n"] for r in await store.pool.fetch("SELECT task_key, n FROM groups")
    }
    assert after == {
        **{k: before_groups[k] - 1 for k in before_groups if k.startswith("task_id:shared")},
        "task_id:other": 5,
    }
    assert await _count(store, "SELECT count(*) FROM heldout_keys") == 0
    # the dataset: a new revision without the user's rows, still verifiable
    folder = tmp_path / "datasets" / AGENT / w["dataset_id"]
    manifest = verify_dataset(folder)
    assert manifest.revision == 2 and manifest.revised_by == (report.erasure_id,)
    assert report.plan.datasets[0].outcome == "rewritten"
    assert sum(report.plan.datasets[0].rows_removed.values()) > 0
    text = "".join(p.read_text() for p in folder.iterdir() if p.is_file())
    assert not any(rid in text for rid in w["user_rids"])
    row = await store.pool.fetchrow(
        "SELECT revision, revoked_by, n_rollouts FROM datasets WHERE dataset_id = $1",
        w["dataset_id"],
    )
    assert row["revision"] == 2 and row["revoked_by"] is None
    assert row["n_rollouts"] == await _count(
        store, f"SELECT count(*) FROM rollouts WHERE released_in = '{w['dataset_id']}'"
    )
    # the run's copy is gone, its weights stay; run and model listed, champion kept, flagged
    assert not (tmp_path / "runs" / "run-1" / "work" / "prompts.jsonl").exists()
    assert (tmp_path / "runs" / "run-1" / "adapter" / "adapter_model.safetensors").exists()
    assert [r.run_id for r in report.plan.runs] == ["run-1"]
    assert report.plan.models == (w["model"],)
    assert report.plan.champions[0].outcome.startswith("kept")
    assert await store.get_alias(AGENT, "champion") == w["model"]
    impacts = await store.erasure_impacts("model", [w["model"]])
    assert [i.erasure_id for i in impacts[w["model"]]] == [report.erasure_id]
    tree = await build_tree(store, "model", w["model"])
    assert tree.root.details.get("erasures") == [report.erasure_id]
    record = await store.get_erasure(str(report.erasure_id))
    assert record is not None and record.status == "done" and record.counts["transcripts"] == 9
    assert record.affected["models"] == [w["model"]]
    # nothing of the user anywhere: tables, Redis, files
    wanted = needles([*w["user_cids"], *w["user_rids"], USER_CID.format(i=99)])
    found = {
        **await scan_postgres(migrated_dsn, wanted),
        **await scan_redis(state.redis, wanted),
        **scan_files(tmp_path, wanted),
    }
    assert not found, json.dumps(found, indent=1)
    # and the user's conversations can never be stored again (a replay from a topic)
    assert await store.save_rollouts(w["user_rollouts"]) == []
    assert await store.erased_among(sorted(w["user_cids"])) == w["user_cids"]
    again = await eraser.run(Selector(kind="user_key", value="C-20931"))
    assert again.counts.get("transcripts", 0) == 0
