"""Erasure on a real Postgres and Redis: one user's conversations, ingested (redacted, keyed),
graded, released in a curated dataset, trained on by a run whose model is champion, are
erased; then every table, every Redis key and every file under the data folders is
searched for the user's values, stand-ins and ids: nothing; the record, the new dataset
revision, the affected run and model are there, and nobody else lost a row."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import pytest
from erasure_world import AGENT, make_eraser, world

from rlstream.curation import verify_dataset
from rlstream.erasure import Selector
from rlstream.lineage import build_tree
from rlstream.pii import keys
from rlstream.storage import (
    RedisState,
    Store,
)
from rlstream_testkit.erasure_probe import (
    USER_CID,
    needles,
    scan_files,
    scan_postgres,
    scan_redis,
)
from rlstream_testkit.stack import TEST_PII_KEY

pytestmark = [pytest.mark.postgres, pytest.mark.redis]


@pytest.fixture(autouse=True)
def _keyed() -> Iterator[None]:
    keys.configure(keys.Pseudonymiser(TEST_PII_KEY.encode()))
    yield
    keys.configure(None)


async def _count(store: Store, sql: str) -> int:
    return int(await store.pool.fetchval(sql))


async def test_erase_one_user_leaves_no_trace_and_lists_what_trained_on_it(
    store: Store, state: RedisState, migrated_dsn: str, tmp_path: Path
) -> None:
    w = await world(store, state, tmp_path)
    eraser = make_eraser(store, state, tmp_path)
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
