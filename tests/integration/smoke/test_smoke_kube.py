"""Real kube-apiserver: create, read and watch a batch/v1 Job, complete it via /status, RBAC 403."""

from __future__ import annotations

import asyncio
import uuid
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest
from lightkube import ApiError, AsyncClient, KubeConfig
from lightkube.models.batch_v1 import JobSpec
from lightkube.models.core_v1 import Container, PodSpec, PodTemplateSpec
from lightkube.models.meta_v1 import ObjectMeta
from lightkube.resources.batch_v1 import Job
from lightkube.resources.core_v1 import Namespace
from lightkube.types import PatchType

pytestmark = [pytest.mark.k8s, pytest.mark.harness]


def _job(name: str, namespace: str) -> Job:
    return Job(
        metadata=ObjectMeta(
            name=name, namespace=namespace, labels={"app.kubernetes.io/name": "rlstream-smoke"}
        ),
        spec=JobSpec(
            backoffLimit=0,
            template=PodTemplateSpec(
                spec=PodSpec(
                    restartPolicy="Never",
                    containers=[Container(name="train", image="busybox:1.36", command=["true"])],
                )
            ),
        ),
    )


def _ts(t: datetime) -> str:
    return t.strftime("%Y-%m-%dT%H:%M:%SZ")


async def test_job_create_watch_complete(kube: Any) -> None:
    client = AsyncClient(KubeConfig.from_file(kube.kubeconfig))
    ns = f"smoke-{uuid.uuid4().hex[:6]}"
    await client.create(Namespace(metadata=ObjectMeta(name=ns)))
    name = "train-smoke"
    created = await client.create(_job(name, ns))
    assert created.metadata is not None and created.metadata.uid
    got = await client.get(Job, name, namespace=ns)
    assert got.spec is not None and got.spec.template.spec is not None
    assert got.spec.template.spec.containers[0].image == "busybox:1.36"
    assert not (got.status and got.status.conditions)  # no controllers: nothing ran it

    seen: list[tuple[str, list[str]]] = []

    async def watch_until_complete() -> None:
        async for op, job in client.watch(
            Job,
            namespace=ns,
            resource_version=got.metadata.resourceVersion,  # type: ignore[union-attr]
        ):
            conds = [c.type for c in (job.status.conditions or [])] if job.status else []
            seen.append((op, conds))
            if "Complete" in conds:
                return

    watcher = asyncio.create_task(watch_until_complete())
    await asyncio.sleep(0.5)
    start = datetime.now(UTC) - timedelta(seconds=5)
    now = _ts(datetime.now(UTC))
    status = {
        "status": {
            "startTime": _ts(start),
            "completionTime": now,
            "succeeded": 1,
            "conditions": [
                {"type": "SuccessCriteriaMet", "status": "True", "lastTransitionTime": now},
                {"type": "Complete", "status": "True", "lastTransitionTime": now},
            ],
        }
    }
    patched = await client.patch(Job.Status, name, status, namespace=ns, patch_type=PatchType.MERGE)
    assert patched.status is not None and patched.status.succeeded == 1
    await asyncio.wait_for(watcher, 30)
    assert seen[-1][0] == "MODIFIED" and "Complete" in seen[-1][1]
    final = await client.get(Job, name, namespace=ns)
    assert final.status is not None
    assert {c.type: c.status for c in final.status.conditions or []} == {
        "SuccessCriteriaMet": "True",
        "Complete": "True",
    }
    await client.close()


async def test_limited_token_is_forbidden(kube: Any) -> None:
    client = AsyncClient(KubeConfig.from_file(kube.limited_kubeconfig))
    try:
        with pytest.raises(ApiError) as err:
            await client.create(_job("not-allowed", "default"))
        assert err.value.status.code == 403
        with pytest.raises(ApiError) as err2:
            _ = [j async for j in client.list(Job, namespace="default")]
        assert err2.value.status.code == 403
    finally:
        await client.close()


def test_server_version_is_stamped(kube: Any) -> None:
    # Unstamped builds report v0.0.0-master, which breaks Helm kubeVersion checks.
    assert kube.version().startswith("v1.")
