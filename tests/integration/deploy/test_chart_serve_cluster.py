"""The chart's `rlstream serve` Deployment on the real single-node cluster: installed with
serve.enabled (the CPU trainer image, the bundled small base model), its pod becomes Ready
through the chart's probes, answers /v1/models and a chat completion through its Service,
logs the exchange to the raw topic, and `helm test` waits for its /readyz. The image is the
harness's CPU trainer image as built (docker/Dockerfile.trainer-cpu installs the serve
extra), with nothing mounted in."""

from __future__ import annotations

import asyncio
import json
import time
from pathlib import Path
from typing import Any

import pytest
from chart_install import install_chart
from kube_api import Api, pod_logs

from rlstream.events import topics
from rlstream_testkit.stack import read_topic

pytestmark = [pytest.mark.cluster, pytest.mark.helm, pytest.mark.timeout(1500)]
NS = "rls-serve"
REL = "srv"
SERVE = f"{REL}-rlstream-serve"
CLIENT = """
import json, os, urllib.request
base = "http://%s:%s" % (os.environ["SRV_RLSTREAM_SERVE_SERVICE_HOST"], os.environ["SRV_RLSTREAM_SERVE_SERVICE_PORT"])
with urllib.request.urlopen(base + "/v1/models", timeout=60) as r:
    print("MODELS", r.status, r.read().decode(), flush=True)
body = {"messages": [{"role": "user", "content": "Say hi."}], "max_tokens": 4,
        "metadata": {"source": "chart-serve-test"}}
req = urllib.request.Request(base + "/v1/chat/completions", data=json.dumps(body).encode(),
                             headers={"Content-Type": "application/json"})
with urllib.request.urlopen(req, timeout=300) as r:
    print("CHAT", r.status, r.headers["X-Conversation-Id"], r.read().decode(), flush=True)
"""


def _ready(pod: dict[str, Any]) -> bool:
    conds = pod.get("status", {}).get("conditions") or []
    return any(c["type"] == "Ready" and c["status"] == "True" for c in conds)


def _client_pod(api: Api, image: str) -> str:
    """Run CLIENT in a pod of the release (the NetworkPolicy admits its label); its log."""
    name = "serve-client"
    api.ok(
        "POST",
        f"/api/v1/namespaces/{NS}/pods",
        {
            "metadata": {
                "name": name,
                "labels": {"app.kubernetes.io/instance": REL, "app.kubernetes.io/component": "t"},
            },
            "spec": {
                "restartPolicy": "Never",
                "automountServiceAccountToken": False,
                "securityContext": {"runAsNonRoot": True, "runAsUser": 10001},
                "containers": [
                    {
                        "name": "c",
                        "image": image,
                        "imagePullPolicy": "Never",
                        "command": ["python3", "-c", CLIENT],
                        "securityContext": {
                            "allowPrivilegeEscalation": False,
                            "readOnlyRootFilesystem": True,
                            "capabilities": {"drop": ["ALL"]},
                        },
                    }
                ],
            },
        },
    )

    def done() -> str | None:
        pod = api.ok("GET", f"/api/v1/namespaces/{NS}/pods/{name}")
        phase = pod.get("status", {}).get("phase")
        return phase if phase in ("Succeeded", "Failed") else None

    phase = api.wait(done, 600, "the client pod to finish", every=2)
    log = api.ok("GET", f"/api/v1/namespaces/{NS}/pods/{name}/log")
    assert phase == "Succeeded", log
    return str(log)


def test_serve_deployment_on_the_cluster(
    cluster: Any, cluster_kafka: Any, cluster_postgres: Any, helm_bin: Path, tmp_path_factory: Any
) -> None:
    t0 = time.monotonic()
    cluster.load_images("TRAINER_IMAGE")
    print(f"[serve] trainer image in containerd after {time.monotonic() - t0:.0f}s")
    cluster_kafka.create_topics(list(topics.ALL_TOPICS))
    rel = install_chart(
        cluster, cluster_kafka, cluster_postgres, helm_bin, tmp_path_factory, NS, REL,
        {
            "serve": {
                "enabled": True,
                "agent": "support-bot",
                "modelId": "chart-base",
                "resources": {"requests": {"cpu": "100m", "memory": "512Mi"},
                              "limits": {"memory": "3Gi"}},
            },
        },
    )  # fmt: skip
    api = rel.api
    try:
        print(f"[serve] installed (--wait: every pod Ready) after {time.monotonic() - t0:.0f}s")
        sel = f"app.kubernetes.io/instance={REL},app.kubernetes.io/component=serve"
        [pod] = api.ok("GET", f"/api/v1/namespaces/{NS}/pods?labelSelector={sel}")["items"]
        assert _ready(pod), pod_logs(api, NS, sel)
        spec = pod["spec"]
        assert spec["serviceAccountName"] == SERVE
        assert spec["containers"][0]["securityContext"]["readOnlyRootFilesystem"] is True
        assert spec["containers"][0]["image"].endswith(cluster.images["TRAINER_IMAGE"])

        log = _client_pod(api, cluster.images["RLSTREAM_IMAGE"])
        print("[serve] client:", log)
        models = next(line for line in log.splitlines() if line.startswith("MODELS "))
        status, body = models.split(" ", 2)[1:]
        assert status == "200" and [m["id"] for m in json.loads(body)["data"]] == ["chart-base"]
        chat = next(line for line in log.splitlines() if line.startswith("CHAT "))
        status, conv_id, body = chat.split(" ", 3)[1:]
        answer = json.loads(body)
        assert status == "200" and answer["model"] == "chart-base", answer
        assert answer["choices"][0]["message"]["role"] == "assistant"

        # --log-kafka: the exchange is on the raw topic, tagged with the serving model id.
        def logged() -> list[dict[str, Any]]:
            recs = asyncio.run(read_topic(cluster_kafka.bootstrap, topics.CONVERSATIONS_RAW))
            mine = [json.loads(r.value) for r in recs]
            return [m for m in mine if m.get("conversation_id") == conv_id]

        [record] = api.wait(logged, 60, "the served conversation on the raw topic", every=2)
        assert record["model"] == "chart-base" and record["agent"] == "support-bot"

        res = rel.helm("test", REL, "--logs", "--timeout", "4m")
        assert f"{SERVE} http://" in res.stdout and ":8000/readyz 200" in res.stdout, res.stdout
        print(f"[serve] done after {time.monotonic() - t0:.0f}s")
    except BaseException:
        print(pod_logs(api, NS, "app.kubernetes.io/component=serve"))
        raise
    finally:
        rel.uninstall()
