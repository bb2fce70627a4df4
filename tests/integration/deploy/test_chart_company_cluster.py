"""The chart with a company cluster's values on the real single-node cluster (issue 19):
a per-key existingSecret, a CA volume, ServiceAccount annotations, the services image by
digest through global.imageRegistry, pull secrets, priority classes, the migration and
topics hook Jobs, and a ServiceMonitor + PrometheusRule against prometheus-operator's real
CRDs. `helm test` passes; the hook migrated before the pods started (they only check);
a training Job built from the applied ConfigMaps is selected by the applied NetworkPolicy
and kept apart from another release's; a pod refuses a schema newer than its code."""

from __future__ import annotations

import asyncio
import datetime
import subprocess
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import asyncpg
import pytest
from chart_install import Release, install_chart
from kube_api import Api, pod_logs
from promcrds import install_crds
from typer.testing import CliRunner

from rlstream_testkit.stack import TEST_PII_KEY

pytestmark = [pytest.mark.cluster, pytest.mark.helm, pytest.mark.timeout(1200)]

NS = "rls-corp"
REL = "corp"
PREFIX = "corp."
SERVICES = ("ingest", "grader", "curator")
ROLE_ARN = "arn:aws:iam::123456789012:role/rlstream"
CA_PEM = "/etc/rlstream/ca/ca.crt"


def _ca_pem() -> str:
    """A real self-signed CA certificate (what a company's internal CA Secret holds)."""
    import datetime

    from cryptography import x509
    from cryptography.hazmat.primitives import hashes, serialization
    from cryptography.hazmat.primitives.asymmetric import ec
    from cryptography.x509.oid import NameOID

    key = ec.generate_private_key(ec.SECP256R1())
    name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "corp test CA")])
    now = datetime.datetime.now(datetime.UTC)
    cert = (
        x509.CertificateBuilder().subject_name(name).issuer_name(name)
        .public_key(key.public_key()).serial_number(x509.random_serial_number())
        .not_valid_before(now).not_valid_after(now + datetime.timedelta(days=1))
        .add_extension(x509.BasicConstraints(ca=True, path_length=None), critical=True)
        .sign(key, hashes.SHA256())
    )  # fmt: skip
    return cert.public_bytes(serialization.Encoding.PEM).decode()


def _digest(cluster: Any) -> str:
    """The services image's digest as the node's containerd knows it."""
    from rlstream_testkit.cluster import full_ref

    want = full_ref(cluster.images["RLSTREAM_IMAGE"])
    [digest] = [d for name, d in cluster._image_refs() if name == want]
    assert digest.startswith("sha256:")
    return str(digest)


def _name_by_digest(cluster: Any, digest: str) -> None:
    """`docker save | ctr import` names the image by its tag only; a registry pull also
    records repo@digest, the name a digest reference resolves to (pullPolicy Never finds
    nothing else). Add that name, as a pull would."""
    from rlstream_testkit.cluster import full_ref

    ref = full_ref(cluster.images["RLSTREAM_IMAGE"])
    res = subprocess.run(
        cluster._ctr("images", "tag", "--force", ref, f"{ref.rsplit(':', 1)[0]}@{digest}"),
        capture_output=True, text=True, timeout=60,
    )  # fmt: skip
    assert res.returncode == 0, res.stderr


@pytest.fixture(scope="module")
def release(
    cluster: Any, cluster_kafka: Any, cluster_postgres: Any, helm_bin: Path, tmp_path_factory: Any
) -> Iterator[Release]:
    api = Api(cluster.kube.server, cluster.kube.token)
    install_crds(api)
    for pc in ("corp-services", "corp-gpu"):
        code, body = api.call(
            "POST", "/apis/scheduling.k8s.io/v1/priorityclasses",
            {"metadata": {"name": pc}, "value": 1000, "globalDefault": False},
        )  # fmt: skip
        assert code in (201, 409), body

    def prepare(api: Api, dsn: str) -> None:
        secrets = f"/api/v1/namespaces/{NS}/secrets"
        # a Secret another team made: its own key names
        api.ok(
            "POST", secrets,
            {"metadata": {"name": "corp-db"}, "stringData": {"dsn": dsn, "pii-key": TEST_PII_KEY}},
        )  # fmt: skip
        api.ok("POST", secrets, {"metadata": {"name": "corp-ca"}, "stringData": {"ca.crt": _ca_pem()}})  # fmt: skip
        api.ok(
            "POST", secrets,
            {"metadata": {"name": "regcred"}, "type": "kubernetes.io/dockerconfigjson",
             "stringData": {".dockerconfigjson": '{"auths": {}}'}},
        )  # fmt: skip

    repo = cluster.images["RLSTREAM_IMAGE"].rsplit(":", 1)[0]
    _name_by_digest(cluster, _digest(cluster))
    values = {
        "global": {"imageRegistry": "docker.io/library"},
        "image": {"repository": repo, "digest": _digest(cluster)},
        "imagePullSecrets": [{"name": "regcred"}],
        "config": {"topicPrefix": PREFIX},
        "existingSecret": {"name": "corp-db", "keys": {"postgresDsn": "dsn", "piiKey": "pii-key"}},
        "tls": {"caSecret": "corp-ca"},
        "serviceAccounts": {"annotations": {"eks.amazonaws.com/role-arn": ROLE_ARN}},
        "podLabels": {"team": "ml"},
        "podAnnotations": {"corp.example/owner": "ml-platform"},
        "priorityClassName": "corp-services",
        "training": {"priorityClassName": "corp-gpu"},
        "migrations": {"hook": True},
        "topics": {"provision": "hook", "replicationFactor": 1},
        "monitoring": {"serviceMonitor": {"enabled": True}, "prometheusRule": {"enabled": True}},
    }
    rel = install_chart(
        cluster, cluster_kafka, cluster_postgres, helm_bin, tmp_path_factory, NS, REL, values,
        prepare,
    )  # fmt: skip
    yield rel
    rel.uninstall()
    for pc in ("corp-services", "corp-gpu"):
        api.call("DELETE", f"/apis/scheduling.k8s.io/v1/priorityclasses/{pc}")


def _pods(api: Api, component: str) -> list[dict[str, Any]]:
    sel = f"app.kubernetes.io/instance={REL},app.kubernetes.io/component={component}"
    items: list[dict[str, Any]] = api.ok(
        "GET", f"/api/v1/namespaces/{NS}/pods?labelSelector={sel}"
    )["items"]
    return [p for p in items if not p["metadata"].get("deletionTimestamp")]


def _ready(pod: dict[str, Any]) -> bool:
    conds = pod.get("status", {}).get("conditions") or []
    return any(c["type"] == "Ready" and c["status"] == "True" for c in conds)


async def _fetch(dsn: str, sql: str) -> Any:
    conn = await asyncpg.connect(dsn)
    try:
        return await conn.fetchval(sql)
    finally:
        await conn.close()


def test_installs_with_the_extension_points_and_helm_test_passes(
    release: Release, cluster: Any
) -> None:
    api = release.api
    digest = _digest(cluster)
    for svc in SERVICES:
        [pod] = _pods(api, svc)
        assert _ready(pod), pod["status"]
        spec = pod["spec"]
        [c] = spec["containers"]
        assert c["image"].endswith(f"@{digest}") and c["image"].startswith("docker.io/library/")
        assert pod["status"]["containerStatuses"][0]["imageID"].endswith(digest)
        assert spec["imagePullSecrets"] == [{"name": "regcred"}]
        assert spec["priorityClassName"] == "corp-services" and spec["priority"] == 1000
        assert pod["metadata"]["labels"]["team"] == "ml"
        assert pod["metadata"]["annotations"]["corp.example/owner"] == "ml-platform"
        env = {e["name"]: e for e in c["env"]}
        assert env["RLSTREAM_POSTGRES_DSN"]["valueFrom"]["secretKeyRef"] == {
            "name": "corp-db", "key": "dsn"
        }  # fmt: skip
        assert env["RLSTREAM_PII_KEY"]["valueFrom"]["secretKeyRef"] == {
            "name": "corp-db", "key": "pii-key"
        }  # fmt: skip
        assert env["RLSTREAM_MIGRATE_ON_START"]["value"] == "false"
        mounts = {m["name"]: m["mountPath"] for m in c["volumeMounts"]}
        assert mounts["rlstream-ca"] == "/etc/rlstream/ca"  # mounted: the pod is Ready
        sa = api.ok("GET", f"/api/v1/namespaces/{NS}/serviceaccounts/{spec['serviceAccountName']}")
        assert sa["metadata"]["annotations"]["eks.amazonaws.com/role-arn"] == ROLE_ARN
    for kind in ("servicemonitors", "prometheusrules"):
        api.ok("GET", f"/apis/monitoring.coreos.com/v1/namespaces/{NS}/{kind}/{REL}-rlstream")
    res = release.helm("test", REL, "--logs", "--timeout", "4m")
    for svc in SERVICES:
        assert f"{REL}-rlstream-{svc} http://" in res.stdout, res.stdout
    assert "FAILED" not in res.stdout


def test_hooks_ran_before_the_pods(release: Release, cluster_kafka: Any) -> None:
    """The services do not migrate (RLSTREAM_MIGRATE_ON_START=false: they would refuse a
    schema behind their code), so Ready pods mean the hook migrated; and it did so before
    the first pod was created. The topics hook made every topic of the table."""
    from rlstream.services.cli.topics_cmd import app as topics_app
    from rlstream.storage import latest_version

    applied_last = asyncio.run(_fetch(release.dsn, "SELECT max(applied_at) FROM schema_migrations"))
    version = asyncio.run(_fetch(release.dsn, "SELECT max(version) FROM schema_migrations"))
    assert version == latest_version()
    first_pod = min(_created(p) for svc in SERVICES for p in _pods(release.api, svc))
    assert applied_last < first_pod, (applied_last, first_pod)
    args = ["plan", "--bootstrap", cluster_kafka.bootstrap, "--prefix", PREFIX,
            "--replication-factor", "1"]  # fmt: skip
    res = CliRunner().invoke(topics_app, args)
    assert res.exit_code == 0 and "in sync" in res.output, res.output


def test_training_job_is_selected_by_the_network_policy_and_kept_to_its_release(
    release: Release, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The Job the curator's launcher would create, built from the APPLIED ConfigMaps and
    created on the cluster: the Job controller's pod carries the labels the applied
    NetworkPolicy selects (enforcement needs a policy-enforcing CNI; the harness's bridge
    CNI does not enforce), the pull secret, the CA volume and the GPU priority class; a
    second release's Job in the same namespace is outside this release's selector."""
    from rlstream.launch import LaunchRequest, LaunchSettings, plan_run
    from rlstream.launch.k8s_manifest import job_manifest, selector

    api = release.api
    for cm in (f"{REL}-rlstream-config", f"{REL}-rlstream-training"):
        for k, v in api.ok("GET", f"/api/v1/namespaces/{NS}/configmaps/{cm}")["data"].items():
            monkeypatch.setenv(k, v)
    monkeypatch.setenv("RLSTREAM_K8S_NAMESPACE", NS)
    ours = LaunchSettings()
    theirs = ours.model_copy(update={"k8s_release": "other", "k8s_job_prefix": "other-train-"})
    jobs = f"/apis/batch/v1/namespaces/{NS}/jobs"
    names = []
    for s, sha in ((ours, "a" * 64), (theirs, "b" * 64)):
        req = LaunchRequest(dataset_id=sha, agent="a", reward_spec="outcome", path="/d", sha256=sha)
        job = job_manifest(plan_run(req, runs_dir=s.runs_path()), s)
        names.append(api.ok("POST", jobs, job)["metadata"]["name"])
    try:
        policy = api.ok(
            "GET", f"/apis/networking.k8s.io/v1/namespaces/{NS}/networkpolicies/{REL}-rlstream"
        )["spec"]["podSelector"]["matchLabels"]
        pod = api.wait(
            lambda: api.ok(
                "GET", f"/api/v1/namespaces/{NS}/pods?labelSelector=job-name={names[0]}"
            )["items"],
            120,
            "the training Job's pod",
        )[0]
        labels = pod["metadata"]["labels"]
        assert all(labels.get(k) == v for k, v in policy.items()), (policy, labels)
        assert labels["team"] == "ml"
        spec = pod["spec"]
        assert spec["imagePullSecrets"] == [{"name": "regcred"}]
        assert spec["priorityClassName"] == "corp-gpu"
        assert any(v["name"] == "rlstream-ca" for v in spec["volumes"])
        [c] = spec["containers"]
        assert {"name": "rlstream-ca", "mountPath": "/etc/rlstream/ca", "readOnly": True} in c[
            "volumeMounts"
        ]
        env = {e["name"]: e for e in c["env"]}
        assert env["RLSTREAM_POSTGRES_DSN"]["valueFrom"]["secretKeyRef"]["key"] == "dsn"
        other = api.ok("GET", f"/api/v1/namespaces/{NS}/pods?labelSelector=job-name={names[1]}")
        for p in other["items"]:  # the other release's pod is outside this policy
            assert p["metadata"]["labels"].get("app.kubernetes.io/instance") == "other"
        sel = ",".join(f"{k}={v}" for k, v in selector(ours).items())
        listed = api.ok("GET", f"{jobs}?labelSelector={sel}")["items"]
        assert [j["metadata"]["name"] for j in listed] == [names[0]]
    finally:
        for n in names:
            api.call("DELETE", f"{jobs}/{n}?propagationPolicy=Background")


def _created(obj: dict[str, Any]) -> datetime.datetime:
    return datetime.datetime.fromisoformat(
        obj["metadata"]["creationTimestamp"].replace("Z", "+00:00")
    )


def test_upgrade_runs_the_hooks_before_the_new_pods(release: Release) -> None:
    """`helm upgrade`: the pre-upgrade migration and topics Jobs run to completion (then are
    deleted) before the first pod of the rolled Deployments is created."""
    from chart_install import CHART

    api = release.api
    before = {p["metadata"]["name"] for svc in SERVICES for p in _pods(api, svc)}
    release.helm(
        "upgrade", REL, str(CHART), "-f", str(release.values), "--set", "config.logLevel=DEBUG",
        "--wait", "--timeout", "6m",
    )  # fmt: skip
    new_pods = [
        p for svc in SERVICES for p in _pods(api, svc) if p["metadata"]["name"] not in before
    ]
    assert len(new_pods) == len(SERVICES) and all(_ready(p) for p in new_pods)
    events = api.ok("GET", f"/api/v1/namespaces/{NS}/events")["items"]
    for hook in ("migrate", "topics"):
        completed = [
            datetime.datetime.fromisoformat(
                (e.get("lastTimestamp") or e["eventTime"]).replace("Z", "+00:00")
            )
            for e in events
            if e["involvedObject"]["kind"] == "Job"
            and e["involvedObject"]["name"] == f"{REL}-rlstream-{hook}"
            and e["reason"] == "Completed"
        ]
        assert len(completed) == 2, (hook, completed)  # install and upgrade
        assert max(completed) <= min(_created(p) for p in new_pods), hook
    jobs = api.ok("GET", f"/apis/batch/v1/namespaces/{NS}/jobs")["items"]
    assert not [j for j in jobs if j["metadata"]["name"].endswith(("-migrate", "-topics"))]


def test_a_pod_refuses_a_schema_newer_than_its_code(release: Release) -> None:
    """A newer release migrated the database (here: a migration row this code does not know)
    and this release's pod restarts: it stops at start with one line, never serves."""
    from rlstream.storage import latest_version

    api = release.api
    future = latest_version() + 1
    asyncio.run(
        _fetch(
            release.dsn,
            "INSERT INTO schema_migrations (version, name, sha256) "
            f"VALUES ({future}, 'from_a_newer_release', 'x') RETURNING version",
        )
    )
    [old] = _pods(api, "grader")
    api.ok("DELETE", f"/api/v1/namespaces/{NS}/pods/{old['metadata']['name']}")
    sel = f"app.kubernetes.io/instance={REL},app.kubernetes.io/component=grader"

    def refused() -> str | None:
        pods = [p for p in _pods(api, "grader") if p["metadata"]["name"] != old["metadata"]["name"]]
        if not pods:
            return None
        logs = pod_logs(api, NS, sel)
        return logs if "schema is newer than this code" in logs else None

    logs = api.wait(refused, 180, "the new grader pod's refusal")
    assert f"{future:04d}" in logs and "Traceback" not in logs
    assert not any(_ready(p) for p in _pods(api, "grader"))
