"""End to end on real Kafka + Postgres + Redis + kube-apiserver: conversations in ->
curator releases a dataset -> a batch/v1 Job exists (created with the chart's launcher
ServiceAccount token) -> its status is patched to Complete -> a TrainingRunEvent
``succeeded`` on rlstream.training.v1 and the run recorded in Postgres."""

from __future__ import annotations

import asyncio
import json
import sys
import time
from pathlib import Path
from typing import Any

import pytest
from helpers import pg

from rlstream.events import DatasetReleased, TrainingRunEvent, topics
from rlstream_testkit.stack import conversation, encode, produce, wait_for_count

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "launch"))
from kubehelp import admin, apply_chart_launcher_rbac, finish, namespace, sa_kubeconfig

pytestmark = [
    pytest.mark.kafka, pytest.mark.postgres, pytest.mark.redis, pytest.mark.k8s,
    pytest.mark.helm, pytest.mark.slow,
]  # fmt: skip


async def _chart_launcher_sa(kube: Any, helm_bin: Path, tmp: Path) -> tuple[str, Path]:
    client = admin(kube)
    ns = await namespace(client, "e2e")
    sa = await apply_chart_launcher_rbac(helm_bin, client, ns)
    cfg = await sa_kubeconfig(kube, client, ns, sa, tmp / "sa.kubeconfig")
    await client.close()
    return ns, cfg


async def _jobs(kube: Any, ns: str) -> list[Any]:
    from lightkube.resources.batch_v1 import Job

    client = admin(kube)
    try:
        return [j async for j in client.list(Job, namespace=ns)]
    finally:
        await client.close()


def test_release_launches_a_job_and_its_completion_is_published(
    make_stack: Any, kube: Any, helm_bin: Path, tmp_path: Path
) -> None:
    ns, kubeconfig = asyncio.run(_chart_launcher_sa(kube, helm_bin, tmp_path))
    st = make_stack(
        rlstream_release_min_rollouts="40",
        rlstream_release_min_groups="4",
        rlstream_release_min_gradient_support="0.2",
        rlstream_release_check_interval_s="0.5",
        rlstream_launcher="kubernetes",
        rlstream_k8s_kubeconfig=str(kubeconfig),
        rlstream_k8s_namespace=ns,
        rlstream_k8s_gpus="0",
    )
    st.start("ingest", "grader", "curator")
    convs = [conversation(f"c{i}", f"task{i % 8}", resolved=(i // 8) % 3 == 0) for i in range(60)]
    asyncio.run(produce(st.bootstrap, st.topic(topics.CONVERSATIONS_RAW), encode(convs)))
    ds = asyncio.run(wait_for_count(st.bootstrap, st.topic(topics.DATASETS), 1, timeout=120))
    assert ds, "no dataset released"
    release = DatasetReleased.model_validate_json(ds[0].value)

    deadline = time.monotonic() + 60
    jobs: list[Any] = []
    while not jobs and time.monotonic() < deadline:
        jobs = asyncio.run(_jobs(kube, ns))
        time.sleep(0.5)
    [job] = jobs
    ann = job.metadata.annotations
    assert ann["rlstream.dev/dataset-sha256"] == release.sha256
    run_id = job.metadata.labels["rlstream.dev/run-id"]

    asyncio.run(finish(admin(kube), job.metadata.name, ns, ok=True))

    def states() -> list[TrainingRunEvent]:
        recs = asyncio.run(wait_for_count(st.bootstrap, st.topic(topics.TRAINING), 2, timeout=5))
        return [TrainingRunEvent.model_validate_json(r.value) for r in recs]

    deadline = time.monotonic() + 60
    events = states()
    while {e.state for e in events} != {"launched", "succeeded"} and time.monotonic() < deadline:
        events = states()
    by_state = {e.state: e for e in events}
    assert set(by_state) == {"launched", "succeeded"}, [e.state for e in events]
    done = by_state["succeeded"]
    assert (done.run_id, done.dataset_id, done.launcher) == (
        run_id,
        release.dataset_id,
        "kubernetes",
    )
    assert done.event_id == f"{run_id}:succeeded"
    rows = asyncio.run(
        pg(st.dsn, "SELECT status, dataset_id, spec FROM runs WHERE run_id = $1", run_id)
    )
    assert len(rows) == 1 and rows[0]["status"] == "succeeded"
    assert rows[0]["dataset_id"] == release.dataset_id
    spec = rows[0]["spec"]
    spec = json.loads(spec) if isinstance(spec, str) else spec
    assert spec["budget"]["gpu_hours"] > 0 and spec["launcher"] == "kubernetes"
    curator = st.procs[-1]
    assert curator.alive(), curator.tail()


def test_a_failed_launch_is_retried_and_the_release_is_not_republished(
    make_stack: Any, kube: Any, helm_bin: Path, tmp_path: Path
) -> None:
    async def account_only() -> tuple[str, Path]:
        client = admin(kube)
        ns = await namespace(client, "retry")
        sa = await apply_chart_launcher_rbac(helm_bin, client, ns, only_account=True)
        cfg = await sa_kubeconfig(kube, client, ns, sa, tmp_path / "sa.kubeconfig")
        await client.close()
        return ns, cfg

    ns, kubeconfig = asyncio.run(account_only())  # the Role is not there yet: 403
    st = make_stack(
        rlstream_release_min_rollouts="40",
        rlstream_release_min_groups="4",
        rlstream_release_min_gradient_support="0.2",
        rlstream_release_check_interval_s="0.5",
        rlstream_launch_retry_interval_s="1",
        rlstream_launcher="kubernetes",
        rlstream_k8s_kubeconfig=str(kubeconfig),
        rlstream_k8s_namespace=ns,
        rlstream_k8s_gpus="0",
    )
    st.start("ingest", "grader", "curator")
    convs = [conversation(f"r{i}", f"task{i % 8}", resolved=(i // 8) % 3 == 0) for i in range(60)]
    asyncio.run(produce(st.bootstrap, st.topic(topics.CONVERSATIONS_RAW), encode(convs)))
    assert asyncio.run(wait_for_count(st.bootstrap, st.topic(topics.DATASETS), 1, timeout=120))
    time.sleep(3)  # a few retries, all refused
    assert asyncio.run(_jobs(kube, ns)) == []
    # the run is recorded with its budget before the launch, but never got a handle
    rows = asyncio.run(pg(st.dsn, "SELECT spec->>'handle' AS handle FROM runs"))
    assert len(rows) <= 1 and all(r["handle"] is None for r in rows), rows

    async def grant() -> None:
        client = admin(kube)
        await apply_chart_launcher_rbac(helm_bin, client, ns)
        await client.close()

    asyncio.run(grant())
    deadline = time.monotonic() + 60
    jobs: list[Any] = []
    while not jobs and time.monotonic() < deadline:
        jobs = asyncio.run(_jobs(kube, ns))
        time.sleep(0.5)
    assert len(jobs) == 1
    rows = asyncio.run(pg(st.dsn, "SELECT status FROM runs"))
    assert [r["status"] for r in rows] == ["launched"]
    releases = asyncio.run(wait_for_count(st.bootstrap, st.topic(topics.DATASETS), 2, timeout=3))
    assert len(releases) == 1  # retried the launch, not the release
