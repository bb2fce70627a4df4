"""``rlstream demo --cycles``, reduced: a real ``rlstream serve`` process on the base model,
simulated customers over HTTP, two turns of serve -> ingest -> grade -> curate -> train ->
evaluate -> gate -> registry, the server hot-swapped on promote, and lineage from each
served conversation to the model that served it. Every figure comes from this run."""

from __future__ import annotations

import os

os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")  # before torch: see test_demo_loop.py

import asyncio
import sys
from collections.abc import Callable
from pathlib import Path

import orjson
import pytest
from pydantic import SecretStr

from rlstream.lineage import build_tree
from rlstream.pipeline.cycles import CyclesConfig, cycles_gate, run_cycles
from rlstream.reporting import write_html_report
from rlstream.settings import Settings
from rlstream.storage import Store

pytestmark = [pytest.mark.train, pytest.mark.postgres, pytest.mark.slow]

SERVE = (sys.executable, "-m", "rlstream.services.cli.main", "serve")


async def _served_by(dsn: str, model_id: str) -> set[str]:
    store = await Store.connect(dsn, max_size=2)
    try:
        tree = await build_tree(store, "model", model_id)
    finally:
        await store.close()
    return {str(c["conversation_id"]) for c in tree.served}


@pytest.mark.timeout(3600)  # 408 s measured on a quiet 2-core machine (2026-12-03)
def test_two_cycles_serve_train_gate_and_swap_the_served_model(
    tmp_path: Path, base_model: Path, postgres_dsn_factory: Callable[[], str]
) -> None:
    dsn = postgres_dsn_factory()
    cfg = CyclesConfig(
        folder=tmp_path / "demo",
        cycles=2,
        n_tasks=120,  # ~30 held-out task keys at 25%: enough for the exact test to decide
        users_per_cycle=6,
        samples_per_user=2,
        heldout_share=0.25,
        eval_prompts=30,
        train_steps=10,
        base_model=str(base_model),
        gate=cycles_gate(min_prompts=20),
        serve_argv=SERVE,
    )
    records = run_cycles(cfg, settings=Settings(postgres_dsn=SecretStr(dsn), data_dir=tmp_path))
    one, two = records
    assert one.serving_before == f"base:{base_model.name}" and one.conversations == 12
    # cycle 1 trains on the production logs' passes: a proven held-out gain, promoted
    assert one.decision == "promote", one
    assert one.candidate > one.baseline and one.ci_low > 0 and one.n_prompts >= 20
    assert one.serving_after == one.candidate_model and one.swap in ("hot-swap", "restart")
    # the next customers talk to the promoted model: its id tags their conversations
    assert two.serving_before == one.candidate_model
    served = [orjson.loads(x) for x in (cfg.folder / "logs" / "served-cycle2.jsonl").open("rb")]
    assert len(served) == 12 and {r["model"] for r in served} == {one.candidate_model}
    assert two.conversations_per_model == {
        f"base:{base_model.name}": 12,
        one.candidate_model: 12,
    }
    # cycle 2's rows carry the model that produced them
    sft = two.dataset_rows["sft.jsonl"]
    assert set(sft) <= {"shopco-agent-large", f"base:{base_model.name}", one.candidate_model}
    # a decision is applied to what serves: promote swaps, anything else keeps the champion
    if two.decision == "promote":
        assert two.serving_after == two.candidate_model and two.swap
    else:
        assert two.serving_after == one.candidate_model and two.swap is None
    # lineage: the conversations model 1 served are linked to it
    ids = asyncio.run(_served_by(dsn, one.candidate_model))
    assert ids == {r["conversation_id"] for r in served}
    # the report: cycles.json and the page's cycle table
    saved = orjson.loads((cfg.folder / "out" / "cycles.json").read_bytes())
    assert [c["decision"] for c in saved] == [one.decision, two.decision]
    page = write_html_report(cfg.folder / "out").read_text()
    assert "The loop, cycle by cycle" in page and one.candidate_model[:12] in page
