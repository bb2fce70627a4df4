"""RLSTREAM_TRAIN_ON_POLICY on a real Postgres: the launcher trains GRPO on the rows the
agent's champion served, and refuses (recorded, never launched) a release with none of them
or an agent with no champion."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from fakes.launchers import RecordingLauncher
from rlstream.curation import CurateOptions, curate, write_dataset
from rlstream.events import TrainingRunEvent
from rlstream.launch import LaunchCoordinator, LaunchRequest, LaunchSettings, run_id_for
from rlstream.rewards import RewardResult
from rlstream.rollout import ScoredRollout
from rlstream.storage import ModelRecord, PromotionRecord, Store
from rlstream.transcript import Message, Transcript

pytestmark = pytest.mark.postgres

AGENT = "support-bot"
CHAMP = "c" * 64


def _rollout(task: str, i: int, passed: bool, model: str) -> ScoredRollout:
    t = Transcript(
        conversation_id=f"{task}-{i}",
        messages=(
            Message(role="user", content=f"Refund for order {task}? (try {i})"),
            Message(role="assistant", content=("approved" if passed else "checking") + f" {i}"),
        ),
        task_key=task,
        agent=AGENT,
        model=model,
    )
    score = 1.0 if passed else 0.0
    result = RewardResult(reward="outcome", version="1", score=score, passed=passed, threshold=0.5)
    return ScoredRollout(
        rollout_id=ScoredRollout.make_id(t.conversation_id, "outcome"),
        transcript=t,
        results=(result,),
        score=score,
        passed=passed,
        reward_spec="outcome",
    )


def _dataset(root: Path, models: dict[str, str]) -> LaunchRequest:
    rollouts = [_rollout(task, i, i < 2, m) for task, m in models.items() for i in range(4)]
    ds = root / "ds"
    write_dataset(curate(rollouts, CurateOptions(heldout_share=0.0)), ds)
    m = json.loads((ds / "manifest.json").read_text())
    return LaunchRequest(
        dataset_id=m["dataset_id"], agent=AGENT, reward_spec="outcome", path=str(ds),
        sha256=m["dataset_id"], method="grpo",
    )  # fmt: skip


async def _champion(store: Store) -> None:
    await store.register_model(ModelRecord(model_id=CHAMP, agent=AGENT))
    await store.promote(
        PromotionRecord(promotion_id="p-1", agent=AGENT, model_id=CHAMP, alias="champion")
    )


def _coordinator(
    store: Store, tmp_path: Path
) -> tuple[LaunchCoordinator, RecordingLauncher, list[TrainingRunEvent]]:
    events: list[TrainingRunEvent] = []

    async def publish(ev: TrainingRunEvent) -> None:
        events.append(ev)

    launcher = RecordingLauncher()
    settings = LaunchSettings(
        data_dir=tmp_path, train_on_policy=True, train_config={"method": "grpo"}
    )
    return LaunchCoordinator(launcher, store, publish, settings), launcher, events


async def test_on_policy_launch_trains_on_the_champions_rows(store: Store, tmp_path: Path) -> None:
    await _champion(store)
    req = _dataset(tmp_path, {"a": CHAMP, "b": CHAMP, "c": "older-model"})
    coord, launcher, events = _coordinator(store, tmp_path)
    result = await coord.submit(req)
    assert result is not None and result.created
    (spec,) = launcher.specs
    assert spec.config.on_policy == CHAMP and spec.config.method == "grpo"
    assert [e.state for e in events] == ["launched"]


async def test_a_release_the_champion_did_not_serve_is_refused(
    store: Store, tmp_path: Path
) -> None:
    await _champion(store)
    req = _dataset(tmp_path, {"a": "older-model", "b": "older-model"})
    coord, launcher, events = _coordinator(store, tmp_path)
    assert await coord.submit(req) is None and not launcher.specs
    run = await store.get_run(run_id_for(req.sha256))
    assert run is not None and run.status == "failed"
    assert f"none of the 2 grpo.jsonl rows were produced by {CHAMP}" in str(run.metrics["reason"])
    assert [e.state for e in events] == ["failed"]


async def test_an_agent_with_no_champion_is_refused(store: Store, tmp_path: Path) -> None:
    req = _dataset(tmp_path, {"a": CHAMP})
    coord, launcher, _ = _coordinator(store, tmp_path)
    assert await coord.submit(req) is None and not launcher.specs
    run = await store.get_run(run_id_for(req.sha256))
    assert run is not None and "has no champion to train from" in str(run.metrics["reason"])
