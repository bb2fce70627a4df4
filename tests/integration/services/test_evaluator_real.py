"""The evaluator service with its real evaluation (rlstream.evaluation, SmolLM2 on CPU): a
tiny held-out set (3 prompts, greedy, 8 new tokens) so it runs in CI. The candidate is an
untrained-but-random LoRA on 3 held-out prompts: far below the gate's min_prompts, so the
decision is ``insufficient`` (it would be at best a reject), tagged ``gate=insufficient``,
and nothing is promoted."""

from __future__ import annotations

import asyncio
import json
from collections.abc import Callable
from pathlib import Path

import pytest
from helpers import count

from rlstream.events import EvaluationEvent, TrainingRunEvent, topics
from rlstream_testkit.stack import Stack, produce, read_topic, wait_for_count

pytestmark = [
    pytest.mark.kafka, pytest.mark.postgres, pytest.mark.redis, pytest.mark.train,
    pytest.mark.slow, pytest.mark.filterwarnings("ignore::FutureWarning"),
]  # fmt: skip


def _dataset(tmp: Path) -> tuple[Path, list[object]]:
    from rlstream.curation import CurateOptions, curate, write_dataset
    from rlstream.grading import RewardSpec, grade_many
    from rlstream.ingest import IngestOptions, Reject, ingest_paths
    from rlstream.sampledata.orders import write_order_logs

    logs = tmp / "orders.jsonl"
    write_order_logs(logs, seed=3, n_tasks=40, rollouts=3)
    ts = [t for t in ingest_paths([logs], IngestOptions()) if not isinstance(t, Reject)]
    scored = [r for r in grade_many(ts, RewardSpec.parse("tool_calling")) if hasattr(r, "passed")]
    write_dataset(curate(scored, CurateOptions(heldout_share=0.25)), tmp / "dataset")
    return tmp / "dataset", scored


def _random_lora(out: Path) -> Path:
    import torch
    from peft import LoraConfig, get_peft_model

    from rlstream.training.basemodel import ensure_base_model, load_causal_lm

    torch.manual_seed(0)
    lm, _ = load_causal_lm(ensure_base_model())
    cfg = LoraConfig(r=4, target_modules=["q_proj", "v_proj"], init_lora_weights=False)
    get_peft_model(lm, cfg).save_pretrained(str(out / "adapter"))
    return out


def _evaluate(
    st: Stack, tmp_path: Path, run_id: str, **env: str
) -> tuple[EvaluationEvent, dict[str, object]]:
    """Seed a release, start the evaluator with ``env``, send one succeeded run, and return
    its evaluation event and report.json."""
    from rlstream.lineage import record_release
    from rlstream.storage import Store, upgrade
    from rlstream.training.basemodel import ensure_base_model

    dataset, scored = _dataset(tmp_path)

    async def seed() -> str:
        await upgrade(st.dsn)
        store = await Store.connect(st.dsn, max_size=2)
        try:
            return (await record_release(store, dataset, scored)).dataset_id  # type: ignore[arg-type]
        finally:
            await store.close()

    dataset_id = asyncio.run(seed())
    run_dir = _random_lora(tmp_path / run_id)
    reports = tmp_path / "reports"
    ev = st.service(
        "evaluator",
        RLSTREAM_EVAL_GREEDY="true",
        RLSTREAM_EVAL_MAX_PROMPTS="3",
        RLSTREAM_EVAL_MAX_NEW_TOKENS="8",
        RLSTREAM_REPORTS_DIR=str(reports),
        **env,
    )
    ev.start()
    ev.wait_ready()
    event = TrainingRunEvent(
        run_id=run_id, dataset_id=dataset_id, agent="support-bot", reward_spec="tool_calling",
        state="succeeded", backend="builtin", method="sft", base_model=str(ensure_base_model()),
        artifact_dir=str(run_dir), launcher="local",
    )  # fmt: skip
    asyncio.run(
        produce(st.bootstrap, st.topic(topics.TRAINING), [(run_id.encode(), event.dump_json())])
    )
    recs = asyncio.run(wait_for_count(st.bootstrap, st.topic(topics.EVALUATIONS), 1, timeout=280))
    assert recs, ev.tail()
    result = EvaluationEvent.model_validate_json(recs[0].value)
    return result, json.loads((reports / run_id / "report.json").read_text())


def test_real_evaluation_never_promotes_on_three_prompts(
    make_stack: Callable[..., Stack], tmp_path: Path
) -> None:
    st = make_stack()
    result, report = _evaluate(st, tmp_path, "run-real")
    # 3 held-out prompts: too few for the gate (min_prompts 30), recorded, never promoted
    assert result.decision == "insufficient" and result.reasons, result
    assert result.metric == "pass_at_1" and result.delta_ci_low is not None
    assert report["heldout"]["prompts"] == 3 and report["decision"] == "insufficient"
    assert report["baseline"]["model"]["adapter_dir"] is None  # no champion: the base model
    assert report["candidate"]["model"]["adapter_dir"].endswith("run-real/adapter")
    assert count(st.dsn, "SELECT count(*) FROM model_aliases WHERE alias = 'champion'") == 0
    tagged = "SELECT count(*) FROM models WHERE metadata->>'gate' = 'insufficient'"
    assert count(st.dsn, tagged) == 1
    assert asyncio.run(read_topic(st.bootstrap, st.topic(topics.DEPLOYMENTS))) == []


def test_evaluator_plays_heldout_tasks_in_a_replay_environment(
    make_stack: Callable[..., Stack], tmp_path: Path
) -> None:
    """RLSTREAM_EVAL_ENVIRONMENT=replay: the evaluator plays each held-out task as an
    episode against the logged conversations (the logs answer), on the real servers."""
    st = make_stack()
    logs = tmp_path / "orders.jsonl"  # written by _dataset: the conversations the logs hold
    options = json.dumps({"logs": str(logs), "reward": "tool_calling"})
    result, report = _evaluate(
        st, tmp_path, "run-env", RLSTREAM_EVAL_ENVIRONMENT="replay",
        RLSTREAM_EVAL_ENVIRONMENT_OPTIONS=options, RLSTREAM_EVAL_MAX_TURNS="3",
    )  # fmt: skip
    heldout = report["heldout"]
    assert isinstance(heldout, dict) and heldout["form"] == "environment", heldout
    assert heldout["environment"] == {"name": "replay", "max_turns": 3}
    episodes = heldout["episodes"]
    # every episode of both models ended and was accounted for (graded or why not)
    assert sum(episodes["baseline"].values()) == sum(episodes["candidate"].values()) == 3
    assert result.decision in ("insufficient", "reject") and result.reasons, result
    assert count(st.dsn, "SELECT count(*) FROM model_aliases WHERE alias = 'champion'") == 0
