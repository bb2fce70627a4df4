"""The harness's single-node cluster really runs pods: a Job's pod is scheduled, started by
kubelet on containerd with a CNI address, reaches Kafka on the host and the API server
through the `kubernetes` Service (kube-proxy), and the Job completes."""

from __future__ import annotations

import asyncio
import uuid
from typing import Any

import pytest
from kube_api import Api, job_done, pod_logs

from rlstream_testkit.stack import read_topic

pytestmark = [pytest.mark.cluster, pytest.mark.harness]

POD_SCRIPT = """
import asyncio, json, os, ssl, urllib.request
from aiokafka import AIOKafkaProducer

async def produce():
    p = AIOKafkaProducer(bootstrap_servers=os.environ["BOOT"])
    await p.start()
    try:
        await p.send_and_wait(os.environ["TOPIC"], os.environ["POD_IP"].encode())
    finally:
        await p.stop()

asyncio.run(produce())
sa = "/var/run/secrets/kubernetes.io/serviceaccount"
ctx = ssl.create_default_context(cafile=f"{sa}/ca.crt")
host = os.environ["KUBERNETES_SERVICE_HOST"]
req = urllib.request.Request(
    f"https://{host}:{os.environ['KUBERNETES_SERVICE_PORT']}/version",
    headers={"Authorization": "Bearer " + open(f"{sa}/token").read()},
)
print("version", json.load(urllib.request.urlopen(req, context=ctx))["gitVersion"], flush=True)
"""


def _job(name: str, image: str, env: dict[str, str]) -> dict[str, Any]:
    return {
        "apiVersion": "batch/v1",
        "kind": "Job",
        "metadata": {"name": name},
        "spec": {
            "backoffLimit": 0,
            "template": {
                "metadata": {"labels": {"job": name}},
                "spec": {
                    "restartPolicy": "Never",
                    "securityContext": {
                        "runAsNonRoot": True,
                        "runAsUser": 10001,
                        "seccompProfile": {"type": "RuntimeDefault"},
                    },
                    "containers": [
                        {
                            "name": "main",
                            "image": image,
                            "imagePullPolicy": "Never",
                            "command": ["python3", "-c", POD_SCRIPT],
                            "env": [
                                *({"name": k, "value": v} for k, v in env.items()),
                                {
                                    "name": "POD_IP",
                                    "valueFrom": {"fieldRef": {"fieldPath": "status.podIP"}},
                                },
                            ],
                            "resources": {"limits": {"memory": "256Mi", "cpu": "500m"}},
                            "securityContext": {
                                "allowPrivilegeEscalation": False,
                                "readOnlyRootFilesystem": True,
                                "capabilities": {"drop": ["ALL"]},
                            },
                        }
                    ],
                },
            },
        },
    }


def test_node_ready_with_the_built_versions(cluster: Any) -> None:
    api = Api(cluster.kube.server, cluster.kube.token)
    node = api.ok("GET", "/api/v1/nodes")["items"]
    assert len(node) == 1
    info = node[0]["status"]["nodeInfo"]
    assert info["kubeletVersion"] == "v1.36.3"
    assert info["containerRuntimeVersion"].startswith("containerd://")
    print(
        f"[cluster] ready in {cluster.ready_s:.1f}s (node {cluster.node_ready_s:.1f}s, "
        f"image import {cluster.import_s:.1f}s)"
    )


def test_job_pod_runs_reaches_kafka_and_the_api_server(cluster: Any, cluster_kafka: Any) -> None:
    api = Api(cluster.kube.server, cluster.kube.token)
    ns = f"node-{uuid.uuid4().hex[:6]}"
    api.ok("POST", "/api/v1/namespaces", {"metadata": {"name": ns}})
    topic = f"pod-{uuid.uuid4().hex[:6]}"
    cluster_kafka.create_topics([topic], partitions=1)
    name = "hello"
    api.ok(
        "POST",
        f"/apis/batch/v1/namespaces/{ns}/jobs",
        _job(
            name,
            cluster.images["RLSTREAM_IMAGE"],
            {"BOOT": cluster_kafka.bootstrap, "TOPIC": topic},
        ),
    )
    result = api.wait(lambda: job_done(api, ns, name), 240, f"Job {ns}/{name}")
    logs = pod_logs(api, ns, f"job={name}")
    assert result == "Complete", logs
    assert "version v1.36.3" in logs  # in-cluster token + CA via the kubernetes Service
    [pod] = api.ok("GET", f"/api/v1/namespaces/{ns}/pods?labelSelector=job={name}")["items"]
    pod_ip = pod["status"]["podIP"]
    assert pod_ip.startswith(cluster.pod_cidr.rsplit(".", 1)[0] + ".")
    recs = asyncio.run(read_topic(cluster_kafka.bootstrap, topic))
    assert [r.value.decode() for r in recs] == [pod_ip]
    api.ok("DELETE", f"/api/v1/namespaces/{ns}")
