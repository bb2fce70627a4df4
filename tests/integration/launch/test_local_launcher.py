"""The local launcher starts the real trainer service as a child process; the trainer
records its states in Postgres and publishes them on Kafka; the parent reports the exit
code. (A bad configuration exits 2, is recorded as failed with the reason, and the
launcher's own report of the exit changes nothing.)"""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import signal
import uuid
from pathlib import Path
from typing import Any

import pytest
from kubehelp import read_topic

from rlstream.events import TrainingRunEvent, topics
from rlstream.launch import LaunchCoordinator, LaunchRequest, LaunchSettings, RunUpdate
from rlstream.launch.local import LocalLauncher
from rlstream.storage import Store

pytestmark = [pytest.mark.postgres, pytest.mark.kafka]


async def test_local_trainer_bad_config_exits_2_and_is_recorded(
    store: Store,
    migrated_dsn: str,
    kafka: Any,
    demo_dataset: Path,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    prefix = f"t{uuid.uuid4().hex[:8]}."
    topic = prefix + topics.TRAINING
    kafka.create_topics([topic], partitions=1)
    for k, v in {
        "RLSTREAM_POSTGRES_DSN": migrated_dsn,
        "RLSTREAM_KAFKA_BOOTSTRAP": kafka.bootstrap,
        "RLSTREAM_TOPIC_PREFIX": prefix,
        "RLSTREAM_DATA_DIR": str(tmp_path),
        "RLSTREAM_LOG_JSON": "false",
    }.items():
        monkeypatch.setenv(k, v)  # the child inherits this environment
    published: list[TrainingRunEvent] = []

    async def publish(ev: TrainingRunEvent) -> None:
        published.append(ev)

    s = LaunchSettings(data_dir=tmp_path, train_backend="no-such-backend")
    launcher = LocalLauncher(s)
    coord = LaunchCoordinator(launcher, store, publish, s)
    m = json.loads((demo_dataset / "manifest.json").read_text())
    req = LaunchRequest(
        dataset_id=m["dataset_id"], agent="support-bot", reward_spec="customer_support",
        path=str(demo_dataset), sha256=m["dataset_id"], method="sft",
    )  # fmt: skip
    result = await coord.submit(req)
    assert result is not None and result.created and (result.handle or "").startswith("pid ")
    again = await LocalLauncher(s).launch(_spec(coord, req))
    assert not again.created  # the marker file: a second launch is a no-op

    seen: list[RunUpdate] = []

    async def on_update(u: RunUpdate) -> None:
        seen.append(u)
        await coord.tracker.on_update(u)

    follow = asyncio.create_task(launcher.follow(on_update))
    for _ in range(600):
        if seen:
            break
        await asyncio.sleep(0.1)
    follow.cancel()
    with contextlib.suppress(asyncio.CancelledError):
        await follow
    [update] = seen
    log = (Path(s.runs_path()) / result.run_id / "trainer.log").read_text()
    assert update.state == "failed" and "exit code 2" in (update.reason or ""), log
    run = await store.get_run(result.run_id)
    assert run is not None and run.status == "failed"
    assert "unknown training backend 'no-such-backend'" in str(run.metrics["reason"])
    # the trainer published its own states; the parent's report found nothing new
    recs = await read_topic(kafka.bootstrap, topic, 2, timeout=20)
    states = [TrainingRunEvent.model_validate_json(r.value).state for r in recs]
    assert states == ["started", "failed"]
    assert [e.state for e in published] == ["launched"]
    await launcher.close()


def _spec(coord: LaunchCoordinator, req: LaunchRequest) -> Any:
    from rlstream.launch import plan_run

    s = coord.settings
    return plan_run(req, runs_dir=s.runs_path(), backend=s.train_backend)


@pytest.mark.train
@pytest.mark.timeout(420)
async def test_local_launcher_trains_a_real_adapter(
    store: Store,
    migrated_dsn: str,
    kafka: Any,
    demo_dataset: Path,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Curator-style launch -> child trainer -> builtin SFT, one small step on the small
    model -> adapter, metrics.json and run.json written, succeeded in Postgres and on Kafka."""
    from rlstream.training import ensure_base_model
    from rlstream_testkit.paths import cache_dir

    models = str(cache_dir() / "models")
    monkeypatch.setenv("RLSTREAM_MODELS_DIR", models)
    await asyncio.to_thread(ensure_base_model, Path(models))  # converted once, shared
    prefix = f"t{uuid.uuid4().hex[:8]}."
    topic = prefix + topics.TRAINING
    kafka.create_topics([topic], partitions=1)
    for k, v in {
        "RLSTREAM_POSTGRES_DSN": migrated_dsn,
        "RLSTREAM_KAFKA_BOOTSTRAP": kafka.bootstrap,
        "RLSTREAM_TOPIC_PREFIX": prefix,
        "RLSTREAM_DATA_DIR": str(tmp_path),
        "RLSTREAM_LOG_JSON": "false",
        "HF_HUB_OFFLINE": "1",
        "TOKENIZERS_PARALLELISM": "false",
    }.items():
        monkeypatch.setenv(k, v)

    async def publish(ev: TrainingRunEvent) -> None:
        return None

    s = LaunchSettings(
        data_dir=tmp_path, train_max_steps=1, train_config={"batch_size": 1, "max_length": 128}
    )
    launcher = LocalLauncher(s)
    coord = LaunchCoordinator(launcher, store, publish, s)
    m = json.loads((demo_dataset / "manifest.json").read_text())
    req = LaunchRequest(
        dataset_id=m["dataset_id"], agent="support-bot", reward_spec="customer_support",
        path=str(demo_dataset), sha256=m["dataset_id"], method="sft",
    )  # fmt: skip
    result = await coord.submit(req)
    assert result is not None and result.created
    follow = asyncio.create_task(launcher.follow(coord.tracker.on_update))
    out = Path(s.runs_path()) / result.run_id
    run = None
    try:
        for _ in range(2400):  # 4 min at most on a busy 2-core box
            run = await store.get_run(result.run_id)
            if run is not None and run.status in ("succeeded", "failed"):
                break
            await asyncio.sleep(0.1)
    finally:
        follow.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await follow
        with contextlib.suppress(ProcessLookupError):  # never leave a trainer behind
            os.killpg(int((result.handle or "pid 0").split()[1]), signal.SIGKILL)
    log = (out / "trainer.log").read_text()
    assert run is not None and run.status == "succeeded", log
    assert run.metrics["steps"] == 1
    assert list((out / "adapter").glob("*.safetensors")), log
    lineage = json.loads((out / "run.json").read_text())
    assert lineage["run_id"] == result.run_id and lineage["dataset"]["id"] == m["dataset_id"]
    assert json.loads((out / "metrics.json").read_text())
    recs = await read_topic(kafka.bootstrap, topic, 2, timeout=20)
    events = [TrainingRunEvent.model_validate_json(r.value) for r in recs]
    assert [e.state for e in events] == ["started", "succeeded"]
    assert events[-1].artifact_dir == str(out) and events[-1].method == "sft"
    await launcher.close()
