"""What a company cluster adds to the training Job's pod (issue 19): pull secrets, a CA
volume, priority class, affinity, spread, extra env and labels, read from RLSTREAM_K8S_*
JSON the way the chart renders them; absent settings leave the Job as before."""

from __future__ import annotations

import hashlib
import json

import pytest

from rlstream.launch import LaunchRequest, LaunchSettings, plan_run
from rlstream.launch.k8s_manifest import INSTANCE_LABEL, job_manifest

pytestmark = pytest.mark.unit

SHA = hashlib.sha256(b"dataset").hexdigest()
CA_VOLUME = {"name": "rlstream-ca", "secret": {"secretName": "corp-ca"}}
CA_MOUNT = {"name": "rlstream-ca", "mountPath": "/etc/rlstream/ca", "readOnly": True}
PASSWORD = {
    "name": "RLSTREAM_KAFKA_SASL_PASSWORD",
    "valueFrom": {"secretKeyRef": {"name": "corp-db", "key": "kafka-password"}},
}


def _job(monkeypatch: pytest.MonkeyPatch, env: dict[str, object]) -> dict:
    for k, v in env.items():
        monkeypatch.setenv(k, v if isinstance(v, str) else json.dumps(v))
    s = LaunchSettings()
    req = LaunchRequest(
        dataset_id=SHA, agent="a", reward_spec="outcome", path=f"/d/{SHA}", sha256=SHA
    )
    return job_manifest(plan_run(req, runs_dir=s.runs_path()), s, "ml")


def test_cluster_additions_reach_the_pod(monkeypatch: pytest.MonkeyPatch) -> None:
    job = _job(
        monkeypatch,
        {
            "RLSTREAM_K8S_RELEASE": "rls",
            "RLSTREAM_K8S_IMAGE_PULL_SECRETS": ["regcred"],
            "RLSTREAM_K8S_PRIORITY_CLASS": "gpu-batch",
            "RLSTREAM_K8S_AFFINITY": {"nodeAffinity": {"x": 1}},
            "RLSTREAM_K8S_TOPOLOGY_SPREAD": [{"maxSkew": 1, "topologyKey": "zone"}],
            "RLSTREAM_K8S_POD_LABELS": {"team": "ml", INSTANCE_LABEL: "someone-else"},
            "RLSTREAM_K8S_POD_ANNOTATIONS": {"sidecar.istio.io/inject": "false"},
            "RLSTREAM_K8S_EXTRA_ENV": [PASSWORD],
            "RLSTREAM_K8S_EXTRA_ENV_FROM": [{"secretRef": {"name": "extra"}}],
            "RLSTREAM_K8S_EXTRA_VOLUMES": [CA_VOLUME],
            "RLSTREAM_K8S_EXTRA_VOLUME_MOUNTS": [CA_MOUNT],
        },
    )
    tmpl = job["spec"]["template"]
    pod = tmpl["spec"]
    [c] = pod["containers"]
    assert pod["imagePullSecrets"] == [{"name": "regcred"}]
    assert pod["priorityClassName"] == "gpu-batch"
    assert pod["affinity"] == {"nodeAffinity": {"x": 1}}
    assert pod["topologySpreadConstraints"] == [{"maxSkew": 1, "topologyKey": "zone"}]
    assert CA_VOLUME in pod["volumes"] and CA_MOUNT in c["volumeMounts"]
    assert PASSWORD in c["env"]
    assert {"secretRef": {"name": "extra"}} in c["envFrom"]
    assert tmpl["metadata"]["annotations"] == {"sidecar.istio.io/inject": "false"}
    # extra labels are added, but never replace the release label the NetworkPolicy and
    # the watcher select on
    assert tmpl["metadata"]["labels"]["team"] == "ml"
    assert tmpl["metadata"]["labels"][INSTANCE_LABEL] == "rls"
    assert "team" not in job["metadata"]["labels"]


def test_without_them_the_pod_is_unchanged(monkeypatch: pytest.MonkeyPatch) -> None:
    pod = _job(monkeypatch, {})["spec"]["template"]
    for key in ("imagePullSecrets", "priorityClassName", "affinity", "topologySpreadConstraints"):
        assert key not in pod["spec"]
    assert "annotations" not in pod["metadata"]
    assert [v["name"] for v in pod["spec"]["volumes"]] == ["dshm"]
