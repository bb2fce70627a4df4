"""The Job watcher on real kube-apiserver + Kafka + Postgres: patched Job status ->
TrainingRunEvent on rlstream.training.v1 and the runs table; a restarted watcher re-lists
and publishes nothing twice."""

from __future__ import annotations

import asyncio
import contextlib
import hashlib
import json
import uuid
from pathlib import Path
from typing import Any

import pytest
from kubehelp import admin, finish, namespace, read_topic

from rlstream.delivery.outbox import make_producer
from rlstream.events import TrainingRunEvent, topics
from rlstream.launch import LaunchCoordinator, LaunchRequest, LaunchSettings
from rlstream.launch.kubernetes import KubernetesLauncher, job_name
from rlstream.settings import Settings
from rlstream.storage import Store

pytestmark = [pytest.mark.k8s, pytest.mark.kafka, pytest.mark.postgres]


def _requests(dataset: Path) -> list[LaunchRequest]:
    m = json.loads((dataset / "manifest.json").read_text())
    other = hashlib.sha256(b"second dataset").hexdigest()
    return [
        LaunchRequest(
            dataset_id=sha, agent="support-bot", reward_spec="customer_support",
            path=str(dataset), sha256=sha, method="sft",
        )
        for sha in (m["dataset_id"], other)
    ]  # fmt: skip


async def _wait_events(
    bootstrap: str, topic: str, n: int, timeout: float = 30.0
) -> list[TrainingRunEvent]:
    recs = await read_topic(bootstrap, topic, n, timeout=timeout)
    return [TrainingRunEvent.model_validate_json(r.value) for r in recs]


async def _stop(task: asyncio.Task[None]) -> None:
    task.cancel()
    with contextlib.suppress(asyncio.CancelledError):
        await task


async def test_watcher_publishes_succeeded_and_failed(
    kube: Any, kafka: Any, store: Store, demo_dataset: Path, tmp_path: Path
) -> None:
    client = admin(kube)
    ns = await namespace(client, "watch")
    topic = f"t{uuid.uuid4().hex[:8]}.{topics.TRAINING}"
    kafka.create_topics([topic], partitions=3)
    producer = make_producer(Settings(kafka_bootstrap=kafka.bootstrap), "watch-test", 1 << 20)
    await producer.start()

    async def publish(ev: TrainingRunEvent) -> None:
        await producer.send_and_wait(topic, ev.dump_json(), key=ev.run_id.encode())

    s = LaunchSettings(
        data_dir=tmp_path, k8s_namespace=ns, k8s_kubeconfig=kube.kubeconfig, k8s_gpus=0
    )
    coord = LaunchCoordinator(KubernetesLauncher(s), store, publish, s)
    ok_req, bad_req = _requests(demo_dataset)
    ok = await coord.submit(ok_req)
    bad = await coord.submit(bad_req)
    assert ok is not None and bad is not None and ok.created and bad.created
    follow = asyncio.create_task(coord.follow())
    await asyncio.sleep(0.5)
    await finish(client, job_name(ok_req.sha256), ns, ok=True)
    await finish(client, job_name(bad_req.sha256), ns, ok=False, reason="DeadlineExceeded")

    events = await _wait_events(kafka.bootstrap, topic, 4)
    by_id = {e.event_id: e for e in events}
    assert set(by_id) == {
        f"{ok.run_id}:launched", f"{bad.run_id}:launched",
        f"{ok.run_id}:succeeded", f"{bad.run_id}:failed",
    }  # fmt: skip
    failed = by_id[f"{bad.run_id}:failed"]
    assert failed.reason == "DeadlineExceeded: Job was active longer than specified deadline"
    done = by_id[f"{ok.run_id}:succeeded"]
    assert (done.launcher, done.dataset_id, done.agent) == (
        "kubernetes",
        ok_req.dataset_id,
        "support-bot",
    )
    run_ok, run_bad = await store.get_run(ok.run_id), await store.get_run(bad.run_id)
    assert run_ok is not None and run_ok.status == "succeeded"
    assert run_bad is not None and run_bad.status == "failed"
    assert run_bad.metrics["reason"] == failed.reason

    # a restarted curator: a fresh launcher re-lists both finished Jobs, publishes nothing
    await _stop(follow)
    await coord.close()
    coord2 = LaunchCoordinator(KubernetesLauncher(s), store, publish, s)
    follow2 = asyncio.create_task(coord2.follow())
    await asyncio.sleep(2.0)
    await _stop(follow2)
    again = await _wait_events(kafka.bootstrap, topic, 5, timeout=3.0)
    assert len(again) == 4
    await coord2.close()
    await producer.stop()
    await client.close()
