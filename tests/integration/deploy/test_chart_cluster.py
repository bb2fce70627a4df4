"""The Helm chart on the real single-node cluster, with the images the harness built:
install --wait (every pod Ready, the services reach Kafka and PostgreSQL on the host),
`helm test`, RBAC denials proven by impersonation, upgrade rolls the pods, rollback."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from chart_install import CHART, Release, install_chart
from kube_api import Api

# The first test also pays for the install (--wait): images start on a loaded 2-core box.
pytestmark = [pytest.mark.cluster, pytest.mark.helm, pytest.mark.timeout(900)]

NS = "rls-chart"
REL = "rls"
SERVICES = ("ingest", "grader", "curator")


@pytest.fixture(scope="module")
def release(
    cluster: Any, cluster_kafka: Any, cluster_postgres: Any, helm_bin: Path, tmp_path_factory: Any
) -> Iterator[Release]:
    rel = install_chart(
        cluster, cluster_kafka, cluster_postgres, helm_bin, tmp_path_factory, NS, REL,
        {"config": {"topicPrefix": "chart."}},
    )  # fmt: skip
    yield rel
    rel.uninstall()


def _pods(api: Api, component: str) -> list[dict[str, Any]]:
    sel = f"app.kubernetes.io/instance={REL},app.kubernetes.io/component={component}"
    items: list[dict[str, Any]] = api.ok(
        "GET", f"/api/v1/namespaces/{NS}/pods?labelSelector={sel}"
    )["items"]
    return [p for p in items if not p["metadata"].get("deletionTimestamp")]


def _ready(pod: dict[str, Any]) -> bool:
    conds = pod.get("status", {}).get("conditions") or []
    return any(c["type"] == "Ready" and c["status"] == "True" for c in conds)


def test_install_every_pod_ready(release: Release) -> None:
    for svc in SERVICES:
        d = release.api.ok("GET", f"/apis/apps/v1/namespaces/{NS}/deployments/{REL}-rlstream-{svc}")
        assert d["status"].get("readyReplicas") == d["spec"]["replicas"] == 1, d["status"]
        [pod] = _pods(release.api, svc)
        assert _ready(pod)
        spec = pod["spec"]
        assert spec["serviceAccountName"] == f"{REL}-rlstream-{svc}"
        assert spec["securityContext"]["seccompProfile"]["type"] == "RuntimeDefault"
        c = spec["containers"][0]["securityContext"]
        assert c["readOnlyRootFilesystem"] is True and c["runAsNonRoot"] is True
    pvc = release.api.ok(
        "GET", f"/api/v1/namespaces/{NS}/persistentvolumeclaims/{REL}-rlstream-artifacts"
    )
    assert pvc["status"]["phase"] == "Bound"


def test_helm_test_checks_every_service(release: Release) -> None:
    res = release.helm("test", REL, "--logs", "--timeout", "4m")
    for svc in SERVICES:
        assert f"{REL}-rlstream-{svc} http://" in res.stdout and " 200" in res.stdout, res.stdout


def test_rbac_denials_by_impersonation(release: Release) -> None:
    sa = f"system:serviceaccount:{NS}:{REL}-rlstream-"
    job = {
        "apiVersion": "batch/v1",
        "kind": "Job",
        "metadata": {"name": "rbac-probe"},
        "spec": {
            "template": {
                "spec": {
                    "restartPolicy": "Never",
                    "containers": [{"name": "c", "image": "x", "command": ["true"]}],
                }
            }
        },
    }
    jobs = f"/apis/batch/v1/namespaces/{NS}/jobs?dryRun=All"
    curator = release.api.as_user(sa + "curator")
    assert curator.call("POST", jobs, job)[0] == 201  # the launcher may create Jobs
    assert curator.call("GET", f"/api/v1/namespaces/{NS}/pods")[0] == 200
    for method, path in (
        ("GET", f"/api/v1/namespaces/{NS}/secrets"),
        ("POST", f"/api/v1/namespaces/{NS}/pods?dryRun=All"),
        ("DELETE", f"/apis/apps/v1/namespaces/{NS}/deployments/{REL}-rlstream-ingest?dryRun=All"),
        ("GET", "/apis/batch/v1/namespaces/default/jobs"),  # other namespaces: no
    ):
        code, body = curator.call(method, path, {} if method == "POST" else None)
        assert code == 403, (method, path, code, body)
    for role in ("ingest", "grader", "trainer"):
        api = release.api.as_user(sa + role)
        assert api.call("POST", jobs, job)[0] == 403, role
        assert api.call("GET", f"/api/v1/namespaces/{NS}/pods")[0] == 403, role
        assert api.call("GET", f"/api/v1/namespaces/{NS}/configmaps")[0] == 403, role


def test_upgrade_rolls_pods_and_rollback_restores(release: Release) -> None:
    api = release.api
    before = {svc: {p["metadata"]["name"] for p in _pods(api, svc)} for svc in SERVICES}
    cm = f"/api/v1/namespaces/{NS}/configmaps/{REL}-rlstream-config"
    assert api.ok("GET", cm)["data"]["RLSTREAM_LOG_LEVEL"] == "INFO"
    release.helm(
        "upgrade", REL, str(CHART), "-f", str(release.values), "--set", "config.logLevel=DEBUG",
        "--wait", "--timeout", "6m",
    )  # fmt: skip
    assert api.ok("GET", cm)["data"]["RLSTREAM_LOG_LEVEL"] == "DEBUG"
    after = {}
    for svc in SERVICES:
        pods = api.wait(
            lambda svc=svc: (
                [p for p in _pods(api, svc) if _ready(p)] if len(_pods(api, svc)) == 1 else None
            ),
            120,
            f"{svc} rolled to one ready pod",
        )
        after[svc] = {p["metadata"]["name"] for p in pods}
        assert after[svc].isdisjoint(before[svc]), svc  # a new pod replaced the old one
    release.helm("rollback", REL, "1", "--wait", "--timeout", "6m")
    assert api.ok("GET", cm)["data"]["RLSTREAM_LOG_LEVEL"] == "INFO"
    hist = json.loads(release.helm("history", REL, "-o", "json").stdout)
    assert [h["revision"] for h in hist] == [1, 2, 3]
    assert hist[-1]["status"] == "deployed" and "Rollback to 1" in hist[-1]["description"]
    for svc in SERVICES:
        d = api.ok("GET", f"/apis/apps/v1/namespaces/{NS}/deployments/{REL}-rlstream-{svc}")
        assert d["status"].get("readyReplicas") == 1
