"""``rlstream promote`` / ``rlstream lineage`` on the embedded PostgreSQL the demo uses."""

from __future__ import annotations

import asyncio
import json
import shutil
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest
from registry_helpers import batch_demo, fake_adapter
from typer.testing import CliRunner

from rlstream.lineage import record_release
from rlstream.registry import CandidateRun, Registry, Verdict, record_evaluation
from rlstream.services.cli.main import app
from rlstream.storage import Store, start_embedded_postgres, stop_embedded_postgres, upgrade

pytestmark = pytest.mark.postgres

runner = CliRunner()


def _flat(text: str) -> str:
    """Rich wraps long lines at the terminal width; compare words, not line breaks."""
    return " ".join(text.split())


@pytest.fixture
def data_dir() -> Iterator[Path]:
    # not under pytest's tmp_path: the server runs as another user and must traverse it
    d = Path(tempfile.mkdtemp(prefix="rlstream-registry-"))
    d.chmod(0o755)
    try:
        yield d
    finally:
        stop_embedded_postgres(d)
        shutil.rmtree(d, ignore_errors=True)


def _seed(data_dir: Path, demo: Path, tmp: Path) -> tuple[str, str, str, str]:
    """What the demo leaves behind: its dataset recorded, three evaluated models: one
    (promote, no champion yet), two (promote, compared with one), three (reject)."""

    async def go() -> tuple[str, str, str, str]:
        dsn = start_embedded_postgres(data_dir)
        await upgrade(dsn)
        store = await Store.connect(dsn, max_size=2)
        try:
            ds = await record_release(
                store, demo / "out" / "dataset", [demo / "out" / "scored.jsonl"]
            )
            reg = Registry(store)
            ids: list[str] = []
            for n, decision in (("one", "promote"), ("two", "promote"), ("three", "reject")):
                run = CandidateRun(run_id=f"run-{n}", agent=ds.agent, dataset_id=ds.dataset_id)
                champion = ids[0] if n == "two" else None
                ev = await record_evaluation(
                    reg, run, fake_adapter(tmp, n), baseline_model=champion or "base",
                    baseline_champion=champion,
                    verdict=Verdict(decision=decision, delta_ci_low=0.2),  # type: ignore[arg-type]
                )  # fmt: skip
                ids.append(ev.model_id)
            return ids[0], ids[1], ids[2], ds.agent
        finally:
            await store.close()

    return asyncio.run(go())


def test_promote_rollback_and_lineage_commands(data_dir: Path, tmp_path: Path) -> None:
    demo = tmp_path / "demo"
    batch_demo(demo)
    one, two, three, agent = _seed(data_dir, demo, tmp_path)
    dd = ["--data-dir", str(data_dir)]

    res = runner.invoke(app, ["promote", one[:10], *dd])
    assert res.exit_code == 0, res.output
    assert "champion of" in res.output and one[:12] in res.output and "(was none)" in res.output
    assert "not published" in _flat(res.output)
    res = runner.invoke(app, ["promote", "challenger", "--agent", agent, *dd])
    assert res.exit_code == 0, res.output
    assert two[:12] in res.output and f"(was {one[:12]})" in res.output
    # the gate rejected three: a plain promote refuses, --override is explicit and recorded
    res = runner.invoke(app, ["promote", three[:10], *dd])
    assert res.exit_code == 1 and "decided 'reject'" in _flat(res.output), res.output
    assert "--override" in _flat(res.output)
    res = runner.invoke(app, ["promote", three[:10], "--override", "--reason", "hotfix", *dd])
    assert res.exit_code == 0, res.output
    assert "promoted (override)" in _flat(res.output) and f"(was {two[:12]})" in res.output

    back = runner.invoke(app, ["promote", "--rollback", "--agent", agent, *dd])
    assert back.exit_code == 0 and two[:12] in back.output, back.output
    back = runner.invoke(app, ["promote", "--rollback", "--agent", agent, *dd])
    assert back.exit_code == 0, back.output
    assert "rolled back" in back.output and one[:12] in back.output
    none_left = runner.invoke(app, ["promote", "--rollback", "--agent", agent, *dd])
    assert none_left.exit_code == 1 and "no earlier champion" in _flat(none_left.output)
    assert "Traceback" not in none_left.output

    tree = runner.invoke(app, ["lineage", "champion", "--agent", agent, *dd])
    assert tree.exit_code == 0, tree.output
    for word in ("model", "evaluation", "run", "dataset", "group", "rollout", "conversation"):
        assert word in tree.output
    assert "logs/" in tree.output and ".jsonl:" in tree.output  # file:line sources

    raw = runner.invoke(app, ["lineage", one, "--json", *dd])
    assert raw.exit_code == 0, raw.output
    doc = json.loads(raw.output)
    assert doc["root"]["id"] == one and doc["counts"]["conversation"] > 10
    assert all(c["kind"] == "file" and c["file"] for c in doc["conversations"])

    missing = runner.invoke(app, ["lineage", "deadbeefdeadbeef", *dd])
    assert missing.exit_code == 1 and "unknown model" in _flat(missing.output)
    usage = runner.invoke(app, ["promote", *dd])
    assert usage.exit_code == 2 and "--rollback" in _flat(usage.output)
