"""Retention on a real Postgres: rows and files of every kind at controlled ages; exactly
the expired ones go, a dry run removes nothing, the lineage of a kept model stays whole,
and a second pass finds nothing left to do."""

from __future__ import annotations

from datetime import timedelta
from pathlib import Path
from typing import Any

import pytest
from storage_helpers import make_rollout, make_transcript

from rlstream.retention import PRUNED_MARKER, RetentionPolicy, apply_retention
from rlstream.storage import DatasetRecord, Store

pytestmark = pytest.mark.postgres

SPEC = "outcome@1"
DAY = timedelta(days=1)
POLICY = RetentionPolicy(
    turn_buffers=7 * DAY,
    pending_rollouts=30 * DAY,
    datasets_keep=2,
    datasets=30 * DAY,
    run_artifacts=14 * DAY,
)

# dataset id -> (agent, age in days, where its folder is): "root" or "outside"
DATASETS: dict[str, tuple[str, int, str]] = {
    "ds-a0": ("support", 110, "root"),  # lineage of the champion, via a base model
    "ds-a1": ("support", 100, "root"),  # the champion's (run -> dataset by edge only)
    "ds-a2": ("support", 90, "root"),  # the previous champion's (a rollback target)
    "ds-a3": ("support", 80, "root"),  # its run failed: PRUNED
    "ds-a4": ("support", 70, "root"),  # its run is still in flight
    "ds-a5": ("support", 60, "root"),  # its run was rejected: PRUNED
    "ds-a6": ("support", 50, "outside"),  # never trained, but not under the root: skipped
    "ds-a7": ("support", 40, "root"),  # old, but the 2nd newest of its agent
    "ds-a8": ("support", 5, "root"),  # the newest
    "ds-b1": ("billing", 25, "root"),  # 3rd newest of its agent, but young
    "ds-b2": ("billing", 15, "root"),
    "ds-b3": ("billing", 10, "root"),
}
PRUNED = {"ds-a3", "ds-a5"}

# run id -> (status, dataset, age in days, evaluation (decision, age) or None, folder)
RUNS: dict[str, tuple[str, str | None, int, tuple[str, int] | None, str]] = {
    "run-b": ("succeeded", "ds-a0", 120, None, "root"),
    "run-1": ("succeeded", None, 100, ("promote", 99), "root"),
    "run-0": ("succeeded", "ds-a2", 90, ("promote", 89), "root"),
    "run-3": ("failed", "ds-a3", 80, None, "root"),  # REMOVED
    "run-4": ("started", "ds-a4", 70, None, "root"),
    "run-5": ("succeeded", "ds-a5", 60, ("reject", 59), "root"),  # REMOVED
    "run-fail-new": ("failed", None, 3, None, "root"),
    "run-rej-late": ("succeeded", None, 20, ("reject", 2), "root"),
    "run-override": ("succeeded", None, 20, ("reject", 20), "root"),  # promoted anyway
    "run-reeval": ("succeeded", None, 20, ("reject", 20), "root"),  # a later one passed
    "run-outside": ("failed", None, 20, None, "outside"),  # skipped
    "run-shared": ("failed", None, 20, None, "shared"),  # holds the champion: skipped
    "run-budget": ("over_budget", None, 20, None, "none"),  # no folder: nothing to do
}
REMOVED_RUNS = {"run-3", "run-5"}
TRAINING = ("grpo.jsonl", "dpo.jsonl", "sft.jsonl")


async def _age(store: Store, table: str, column: str, key: str, ident: str, days: float) -> None:
    await store.pool.execute(
        f"UPDATE {table} SET {column} = now() - make_interval(secs => $2) WHERE {key} = $1",
        ident,
        days * 86400,
    )


async def _seed(store: Store, root: Path, elsewhere: Path) -> dict[str, Path]:
    paths: dict[str, Path] = {}
    # turn buffers: closed 10 days ago (expired), closed yesterday, open for a month
    for cid in ("b-old", "b-new", "b-open"):
        await store.append_turns(cid, [{"role": "user", "content": cid}])
    for cid in ("b-old", "b-new"):
        await store.close_buffer(cid)
    await _age(store, "turn_buffers", "closed_at", "conversation_id", "b-old", 10)
    await _age(store, "turn_buffers", "closed_at", "conversation_id", "b-new", 1)
    await _age(store, "turn_buffers", "last_seen", "conversation_id", "b-open", 30)
    # datasets: folders with training files, rows with controlled ages
    for ds, (agent, days, where) in DATASETS.items():
        folder = (root / "datasets" if where == "root" else elsewhere) / ds
        folder.mkdir(parents=True)
        for name in (*TRAINING, "manifest.json", "heldout.jsonl"):
            folder.joinpath(name).write_text(f"{ds} {name}\n")
        paths[ds] = folder
        record = DatasetRecord(
            dataset_id=ds, agent=agent, reward_spec=SPEC, manifest={}, path=str(folder)
        )
        await store.save_dataset(record)
        await _age(store, "datasets", "created_at", "dataset_id", ds, days)
    # rollouts: pending for 40 days (expired), pending for 5, released 40 days ago
    rs = {
        k: make_rollout(make_transcript(k, task_key=f"task-{k}"), spec=SPEC)
        for k in ("p-old", "p-new", "r-old")
    }
    await store.save_rollouts(list(rs.values()))
    await store.mark_released("ds-a8", [rs["r-old"].rollout_id])
    for k, days in (("p-old", 40), ("p-new", 5), ("r-old", 40)):
        await _age(store, "rollouts", "created_at", "rollout_id", rs[k].rollout_id, days)
    # runs, their folders and evaluations
    for run, (status, ds, days, evaluation, where) in RUNS.items():
        folder = {"root": root / "runs" / run, "outside": elsewhere / run}.get(where)
        if where == "shared":
            folder = root / "runs" / "shared"
        if folder is not None:
            (folder / "adapter").mkdir(parents=True, exist_ok=True)
            (folder / "adapter" / "weights.bin").write_bytes(b"w" * 64)
            paths[run] = folder
        await store.pool.execute(
            "INSERT INTO runs (run_id, dataset_id, agent, backend, method, status,"
            " artifact_path, created_at, updated_at) VALUES ($1, $2, 'support', 'builtin',"
            " 'grpo', $3, $4, now() - make_interval(days => $5), now() - make_interval(days"
            " => $5))",
            run,
            ds,
            status,
            None if folder is None else str(folder),
            days,
        )
        if evaluation is not None:
            await store.pool.execute(
                "INSERT INTO evaluations (evaluation_id, run_id, agent, baseline_model,"
                " candidate_model, decision, report, created_at) VALUES ($1, $2, 'support',"
                " 'base', $3, $4, '{}', now() - make_interval(days => $5))",
                f"ev-{run}",
                run,
                f"m-{run}",
                evaluation[0],
                evaluation[1],
            )
    await store.pool.execute(
        "INSERT INTO evaluations (evaluation_id, run_id, agent, baseline_model,"
        " candidate_model, decision, report, created_at) VALUES ('ev-again', 'run-reeval',"
        " 'support', 'base', 'm-run-reeval', 'promote', '{}', now() - interval '19 days')"
    )
    # models: the champion (run-1, weights in run-shared's folder), started from m-b;
    # the previous champion m-0; m-override promoted despite its reject
    champion_path = str(root / "runs" / "shared" / "adapter")
    for model, run, path in (
        ("m-1", "run-1", champion_path),
        ("m-b", "run-b", None),
        ("m-0", "run-0", None),
        ("m-override", "run-override", None),
        ("m-run-5", "run-5", str(root / "runs" / "run-5" / "adapter")),
    ):
        await store.pool.execute(
            "INSERT INTO models (model_id, agent, run_id, path) VALUES ($1, 'support', $2, $3)",
            model,
            run,
            path,
        )
    await store.pool.execute(
        "INSERT INTO lineage_edges (from_kind, from_id, to_kind, to_id) VALUES"
        " ('run', 'run-1', 'dataset', 'ds-a1'), ('run', 'run-1', 'model', 'm-b'),"
        " ('dataset', 'ds-a3', 'group', 'g'), ('group', 'g', 'rollout', 'x')"
    )
    await store.pool.execute(
        "INSERT INTO model_aliases (agent, alias, model_id) VALUES ('support', 'champion', 'm-1')"
    )
    await store.pool.execute(
        "INSERT INTO promotions (promotion_id, agent, model_id, alias, previous_model_id) VALUES"
        " ('p1', 'support', 'm-1', 'champion', 'm-0'),"
        " ('p2', 'billing', 'm-override', 'champion', NULL)"
    )
    return paths


async def _snapshot(store: Store, root: Path) -> tuple[Any, ...]:
    buffers = await store.pool.fetch("SELECT conversation_id FROM turn_buffers ORDER BY 1")
    rollouts = await store.pool.fetch("SELECT conversation_id FROM rollouts ORDER BY 1")
    counts = await store.pool.fetch(
        "SELECT (SELECT count(*) FROM datasets), (SELECT count(*) FROM runs),"
        " (SELECT count(*) FROM transcripts), (SELECT sum(n) FROM groups)"
    )
    files = sorted(str(p.relative_to(root)) for p in root.rglob("*"))
    return (
        [r[0] for r in buffers],
        [r[0] for r in rollouts],
        tuple(counts[0]),
        files,
    )


async def test_retention_removes_exactly_the_expired_rows_and_files(
    store: Store, tmp_path: Path
) -> None:
    root, elsewhere = tmp_path / "data", tmp_path / "user-output"
    paths = await _seed(store, root, elsewhere)
    roots = {"dataset_roots": [root / "datasets"], "run_roots": [root / "runs"]}

    before = await _snapshot(store, tmp_path)
    dry = await apply_retention(store, POLICY, dry_run=True, **roots)
    assert await _snapshot(store, tmp_path) == before, "a dry run removed something"

    report = await apply_retention(store, POLICY, **roots)
    expected = {"turn_buffers": 1, "pending_rollouts": 1, "datasets": 2, "run_artifacts": 2}
    assert report.removed == expected
    assert dry.removed == expected and dry.bytes == report.bytes
    assert report.skipped == {"datasets": 1, "run_artifacts": 2}

    buffers, rollouts, counts, _ = await _snapshot(store, tmp_path)
    assert buffers == ["b-new", "b-open"]
    assert rollouts == ["p-new", "r-old"]
    # no row of a dataset or run goes (rollouts point at them), transcripts stay, and the
    # group counters are lifetime counts
    assert counts == before[2]

    for ds, folder in paths.items():
        if not ds.startswith("ds-"):
            continue
        present = sorted(p.name for p in folder.iterdir())
        if ds in PRUNED:
            assert present == ["heldout.jsonl", "manifest.json", PRUNED_MARKER], ds
        else:
            assert present == sorted([*TRAINING, "manifest.json", "heldout.jsonl"]), ds
    for run in RUNS:
        if run in paths:
            assert paths[run].is_dir() == (run not in REMOVED_RUNS), run
    assert (root / "runs" / "shared" / "adapter" / "weights.bin").is_file()

    after = await _snapshot(store, tmp_path)
    again = await apply_retention(store, POLICY, **roots)
    assert again.removed == dict.fromkeys(expected, 0)
    assert await _snapshot(store, tmp_path) == after


async def test_a_released_rollout_is_never_deleted_and_keep_everything_keeps(
    store: Store, tmp_path: Path
) -> None:
    root = tmp_path / "data"
    await _seed(store, root, tmp_path / "user-output")
    before = await _snapshot(store, tmp_path)
    roots = {"dataset_roots": [root / "datasets"], "run_roots": [root / "runs"]}
    report = await apply_retention(store, RetentionPolicy.keep_everything(), **roots)
    assert report.removed == {} and await _snapshot(store, tmp_path) == before
    # a period of one second: every pending rollout goes, the released one stays
    n = await store.purge_pending_rollouts(timedelta(seconds=1), batch=1)
    assert n == 2
    left = await store.pool.fetch("SELECT conversation_id, released_in FROM rollouts")
    assert [(r[0], r[1]) for r in left] == [("r-old", "ds-a8")]


async def test_the_newest_releases_and_open_runs_are_never_listed(
    store: Store, tmp_path: Path
) -> None:
    """The selection itself: keep-newest per agent, the age floor, lineage, open runs."""
    root = tmp_path / "data"
    await _seed(store, root, tmp_path / "elsewhere")
    listed = [ds for ds, _ in await store.prunable_datasets(2, 30 * DAY)]
    assert listed == ["ds-a3", "ds-a5", "ds-a6"]
    assert [ds for ds, _ in await store.prunable_datasets(1, 30 * DAY)] == [
        "ds-a3", "ds-a5", "ds-a6", "ds-a7",
    ]  # fmt: skip
    assert [ds for ds, _ in await store.prunable_datasets(2, 12 * DAY)] == [
        "ds-a3", "ds-a5", "ds-a6", "ds-b1",
    ]  # fmt: skip
    runs = [r for r, _ in await store.expired_run_artifacts(14 * DAY)]
    assert runs == ["run-3", "run-5", "run-outside", "run-shared"]
    assert await store.kept_model_paths() == [str(root / "runs" / "shared" / "adapter")]
