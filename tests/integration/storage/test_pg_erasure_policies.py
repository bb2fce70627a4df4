"""Erasure's other paths on a real Postgres and Redis: a revoked release, a champion rolled
back to the newest one not trained on the data, a release folder out of reach finished by
``--resume``, the conversation and agent selectors, and ``rlstream erase`` itself."""

from __future__ import annotations

import hashlib
import shutil
from collections.abc import Iterator
from pathlib import Path

import pytest
from erasure_world import AGENT, make_eraser, world
from typer.testing import CliRunner

from rlstream.curation.writer import DatasetIntegrityError, verify_dataset
from rlstream.erasure import Selector, resume
from rlstream.erasure.champions import registry_hooks
from rlstream.pii import keys
from rlstream.registry import Registry
from rlstream.storage import ModelRecord, PromotionRecord, RedisState, Store
from rlstream_testkit.erasure_probe import USER_CID
from rlstream_testkit.stack import TEST_PII_KEY

pytestmark = [pytest.mark.postgres, pytest.mark.redis]


@pytest.fixture(autouse=True)
def _keyed() -> Iterator[None]:
    keys.configure(keys.Pseudonymiser(TEST_PII_KEY.encode()))
    yield
    keys.configure(None)


async def test_revoke_and_rollback(store: Store, state: RedisState, tmp_path: Path) -> None:
    earlier = hashlib.sha256(b"m0").hexdigest()
    await store.register_model(ModelRecord(model_id=earlier, agent=AGENT))
    await store.promote(
        PromotionRecord(promotion_id="p0", agent=AGENT, model_id=earlier, alias="champion")
    )
    w = await world(store, state, tmp_path)
    assert await store.get_alias(AGENT, "champion") == w["model"]
    eraser = make_eraser(
        store, state, tmp_path, erasure_datasets="revoke", erasure_champion="rollback"
    )
    eraser.rollback, eraser.previous_of = registry_hooks(Registry(store))
    dry = await eraser.run(Selector(kind="conversation", value=USER_CID.format(i=10)), dry_run=True)
    assert dry.plan.champions[0].outcome == f"would roll back to {earlier[:12]}"
    assert await store.get_alias(AGENT, "champion") == w["model"]
    report = await eraser.run(Selector(kind="conversation", value=USER_CID.format(i=10)))
    assert report.counts["transcripts"] == 1 and report.status == "done"
    assert report.plan.datasets[0].outcome == "revoked"
    folder = tmp_path / "datasets" / AGENT / w["dataset_id"]
    with pytest.raises(DatasetIntegrityError, match="revoked"):
        verify_dataset(folder)
    row = await store.pool.fetchrow(
        "SELECT revoked_by, revision FROM datasets WHERE dataset_id = $1", w["dataset_id"]
    )
    assert row["revoked_by"] == report.erasure_id and row["revision"] == 2
    assert await store.get_alias(AGENT, "champion") == earlier
    last = (await store.list_promotions(AGENT))[-1]
    assert last.kind == "rollback" and last.reason == f"erasure {report.erasure_id}"
    assert report.plan.champions[0].outcome == f"rolled back to {earlier[:12]}"


async def test_a_folder_out_of_reach_is_pending_until_resume(
    store: Store, state: RedisState, tmp_path: Path
) -> None:
    w = await world(store, state, tmp_path)
    folder = tmp_path / "datasets" / AGENT / w["dataset_id"]
    away = tmp_path / "away"
    shutil.move(folder, away)
    eraser = make_eraser(store, state, tmp_path)
    report = await eraser.run(Selector(kind="user_value", value="jane.doe@example.com"))
    assert report.status == "partial" and report.counts["transcripts"] == 9
    assert report.pending == (
        {"kind": "dataset", "id": w["dataset_id"], "why": "folder not on this machine"},
    )
    record = await store.get_erasure(str(report.erasure_id))
    assert record is not None and record.status == "partial"
    shutil.move(away, folder)
    done = await resume(eraser, str(report.erasure_id))
    assert done.status == "done" and done.plan.datasets[0].outcome == "rewritten"
    assert verify_dataset(folder).revision == 2
    text = "".join(p.read_text() for p in folder.iterdir() if p.is_file())
    assert not any(rid in text for rid in w["user_rids"])
    record = await store.get_erasure(str(report.erasure_id))
    assert record is not None and record.status == "done" and record.pending == ()


async def test_agent_selector_takes_only_that_agents_conversations(
    store: Store, state: RedisState, tmp_path: Path
) -> None:
    w = await world(store, state, tmp_path)
    total = int(await store.pool.fetchval("SELECT count(*) FROM transcripts"))
    eraser = make_eraser(store, state, tmp_path)
    none = await eraser.run(Selector(kind="agent", value="nobody-bot"))
    assert none.counts.get("transcripts", 0) == 0
    report = await eraser.run(Selector(kind="agent", value=AGENT))
    assert report.counts["transcripts"] == total
    assert int(await store.pool.fetchval("SELECT count(*) FROM groups")) == 0
    assert w["dataset_id"] in [d.dataset_id for d in report.plan.datasets]


def test_the_cli_dry_run_then_erase(
    migrated_dsn: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, redis_url: str
) -> None:
    import asyncio

    async def seed() -> dict[str, object]:
        store = await Store.connect(migrated_dsn, max_size=2)
        state = RedisState.from_url(redis_url, namespace="cli-erase")
        try:
            return await world(store, state, tmp_path)
        finally:
            await state.close()
            await store.close()

    w = asyncio.run(seed())
    from rlstream.services.cli.main import app

    monkeypatch.setenv("RLSTREAM_DATA_DIR", str(tmp_path))
    monkeypatch.setenv("RLSTREAM_PII_KEY", TEST_PII_KEY)
    monkeypatch.setenv("RLSTREAM_REDIS_URL", redis_url)
    monkeypatch.setenv("RLSTREAM_REDIS_NAMESPACE", "cli-erase")
    args = ["erase", "--user-key", "C-20931", "--dsn", migrated_dsn]
    dry = CliRunner().invoke(app, [*args, "--dry-run"])
    assert dry.exit_code == 0, dry.output
    assert "dry run: would erase a user key: 9 conversation(s)" in dry.output
    assert "C-20931" not in dry.output
    real = CliRunner().invoke(app, args)
    assert real.exit_code == 0, real.output
    assert ": erased a user key: 9 conversation(s), 9 rollout(s)" in real.output
    assert "champion of support-bot:" in real.output and "status done" in real.output
    again = CliRunner().invoke(app, args)
    assert "erased a user key: 0 conversation(s)" in again.output
    tree = CliRunner().invoke(app, ["lineage", str(w["model"]), "--dsn", migrated_dsn])
    assert tree.exit_code == 0, tree.output
    text = " ".join(tree.output.split())  # rich wraps at the terminal's width
    assert "affected by erasure erasure-" in text, text
    assert "(rewritten, revision 2)" in text and "(champion kept" in text, text
