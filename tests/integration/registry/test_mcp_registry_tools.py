"""``lineage``, ``promote`` and ``rollback`` through ``rlstream mcp`` on a real PostgreSQL:
the confirm refusal previews the real champion and changes nothing; with confirm they do
what ``rlstream promote`` does, gate included."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import jsonschema
import pytest
from mcp.client.session import ClientSession
from mcp.shared.memory import create_connected_server_and_client_session
from registry_helpers import batch_demo, fake_adapter

from rlstream.lineage import record_release
from rlstream.registry import CandidateRun, Registry, Verdict, record_evaluation
from rlstream.services.cli.mcpserver.server import build_server
from rlstream.storage import Store, upgrade

pytestmark = pytest.mark.postgres


async def _seed(dsn: str, demo: Path, tmp: Path) -> tuple[list[str], str]:
    """Three evaluated models: one and two decided promote, three reject."""
    await upgrade(dsn)
    store = await Store.connect(dsn, max_size=2)
    try:
        ds = await record_release(store, demo / "out" / "dataset", [demo / "out" / "scored.jsonl"])
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
        return ids, ds.agent
    finally:
        await store.close()


async def _champion(dsn: str, agent: str) -> str | None:
    store = await Store.connect(dsn, max_size=1)
    try:
        return await store.get_alias(agent, "champion")
    finally:
        await store.close()


async def _ok(s: ClientSession, schemas: dict[str, Any], name: str, **args: Any) -> Any:
    r = await s.call_tool(name, args)
    assert not r.isError, r.content[0].text  # type: ignore[union-attr]
    jsonschema.validate(r.structuredContent, schemas[name])
    return r.structuredContent


async def _refused(s: ClientSession, name: str, **args: Any) -> str:
    r = await s.call_tool(name, args)
    assert r.isError
    text: str = r.content[0].text  # type: ignore[union-attr]
    assert "\n" not in text
    return text


async def test_promote_rollback_lineage_through_mcp(
    postgres_dsn_factory: Callable[[], str], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    dsn = postgres_dsn_factory()
    demo = tmp_path / "demo"
    batch_demo(demo)
    (one, two, three), agent = await _seed(dsn, demo, tmp_path)
    monkeypatch.setenv("RLSTREAM_POSTGRES_DSN", dsn)
    monkeypatch.delenv("RLSTREAM_KAFKA_BOOTSTRAP", raising=False)
    server, _ = build_server(tmp_path)
    async with create_connected_server_and_client_session(server) as s:
        schemas = {t.name: t.outputSchema for t in (await s.list_tools()).tools}

        text = await _refused(s, "promote", model=one[:10])
        assert text == (
            f"error: promote would make {one[:12]} the champion of {agent!r} (now none), "
            "deployed to target none; nothing changed: call again with confirm: true"
        )
        assert await _champion(dsn, agent) is None
        got = await _ok(s, schemas, "promote", model=one[:10], confirm=True)
        assert got["model_id"] == one and got["previous_model_id"] is None
        assert got["action"] == "promote" and got["published"] is False

        text = await _refused(s, "promote", model="challenger", agent=agent)
        assert f"make {two[:12]} the champion of {agent!r} (now {one[:12]})" in text
        got = await _ok(s, schemas, "promote", model="challenger", agent=agent, confirm=True)
        assert got["model_id"] == two and got["previous_model_id"] == one
        # the gate still applies: three was rejected
        text = await _refused(s, "promote", model=three[:10], confirm=True)
        assert text.startswith("error (not_gated): evaluation ") and "decided 'reject'" in text
        assert await _champion(dsn, agent) == two

        text = await _refused(s, "rollback", agent=agent)
        assert f"rollback would make the champion of {agent!r} {one[:12]} (now {two[:12]})" in text
        assert await _champion(dsn, agent) == two
        got = await _ok(s, schemas, "rollback", agent=agent, confirm=True)
        assert got["action"] == "rollback" and got["model_id"] == one
        assert await _champion(dsn, agent) == one

        tree = await _ok(s, schemas, "lineage", model="champion", agent=agent, max_nodes=50)
        assert tree["model_id"] == one and tree["counts"]["conversation"] > 10
        kinds = [n["kind"] for n in tree["nodes"]]
        assert kinds[:4] == ["model", "evaluation", "run", "dataset"] and tree["truncated"]
        text = await _refused(s, "lineage", model="deadbeefdeadbeef")
        assert text.startswith("error (unknown_model): unknown model 'deadbeefdeadbeef'")


async def test_estimate_cost_counts_the_days_spend_from_the_system_of_record(
    postgres_dsn_factory: Callable[[], str], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """With a DSN, the budget check adds the GPU-hours of the runs launched today (as the
    launcher does), so a run the launcher would refuse is refused here first."""
    dsn = postgres_dsn_factory()
    demo = tmp_path / "demo"
    batch_demo(demo)
    await upgrade(dsn)
    store = await Store.connect(dsn, max_size=1)
    try:
        await store.pool.execute(
            "INSERT INTO runs (run_id, agent, backend, method, status, spec, created_at) VALUES"
            " ('spent-today', 'a', 'builtin', 'sft', 'succeeded',"
            " '{\"budget\": {\"gpu_hours\": 7.5}}', now() - interval '2 hours'),"
            " ('spent-yesterday', 'a', 'builtin', 'sft', 'succeeded',"
            " '{\"budget\": {\"gpu_hours\": 100}}', now() - interval '2 days')"
        )
    finally:
        await store.close()
    monkeypatch.setenv("RLSTREAM_POSTGRES_DSN", dsn)
    monkeypatch.setenv("RLSTREAM_BUDGET_GPU_HOURS_PER_DAY", "8")
    monkeypatch.delenv("RLSTREAM_KAFKA_BOOTSTRAP", raising=False)
    server, _ = build_server(tmp_path)
    async with create_connected_server_and_client_session(server) as s:
        schemas = {t.name: t.outputSchema for t in (await s.list_tools()).tools}
        cost = await _ok(s, schemas, "estimate_cost", dataset="demo/out/dataset", method="sft")
    assert cost["spent_today_gpu_hours"] == pytest.approx(7.5)
    assert cost["budget_ok"] is (cost["gpu_hours"] + 7.5 <= 8)
    monkeypatch.setenv("RLSTREAM_BUDGET_GPU_HOURS_PER_DAY", "7.5")
    async with create_connected_server_and_client_session(server) as s:
        schemas = {t.name: t.outputSchema for t in (await s.list_tools()).tools}
        cost = await _ok(s, schemas, "estimate_cost", dataset="demo/out/dataset", method="sft")
    assert cost["budget_ok"] is False and "7.50" in cost["budget_reason"]


async def test_estimate_cost_fails_closed_when_the_spend_cannot_be_read(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A system of record that does not answer: the estimate still comes back, the budget
    check does not pass, and the reason says why."""
    demo = tmp_path / "demo"
    batch_demo(demo)
    monkeypatch.setenv("RLSTREAM_POSTGRES_DSN", "postgresql://nobody@127.0.0.1:1/none")
    monkeypatch.delenv("RLSTREAM_KAFKA_BOOTSTRAP", raising=False)
    server, _ = build_server(tmp_path)
    async with create_connected_server_and_client_session(server) as s:
        schemas = {t.name: t.outputSchema for t in (await s.list_tools()).tools}
        cost = await _ok(s, schemas, "estimate_cost", dataset="demo/out/dataset", method="sft")
    assert cost["gpu_hours"] > 0 and cost["budget_ok"] is False
    assert cost["budget_reason"].startswith("today's spend is unknown (cannot connect to postgres")
