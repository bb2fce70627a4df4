"""The Helm chart renders, validates against the 1.36 schemas, and installs into the test API."""

from __future__ import annotations

import os
import subprocess
import sys
import uuid
from pathlib import Path
from typing import Any

import pytest
import yaml

ROOT = Path(__file__).resolve().parents[3]
CHART = ROOT / "charts" / "rlstream"
# The console script next to this interpreter (the venv may not be on PATH).
VALIDATE = str(Path(sys.executable).parent / "kubernetes-validate")


def _helm(helm_bin: Path, *args: str, env: dict[str, str] | None = None) -> str:
    res = subprocess.run(
        [str(helm_bin), *args], capture_output=True, text=True, timeout=120, env=env
    )
    assert res.returncode == 0, f"helm {' '.join(args)} failed:\n{res.stdout}\n{res.stderr}"
    return res.stdout


def _render(helm_bin: Path, *extra: str) -> list[dict[str, Any]]:
    out = _helm(helm_bin, "template", "rls", str(CHART), "--namespace", "ml", *extra)
    return [d for d in yaml.safe_load_all(out) if d]


@pytest.mark.helm
def test_helm_version(helm_bin: Path) -> None:
    assert _helm(helm_bin, "version", "--short").startswith("v3.")


@pytest.mark.helm
def test_lint_strict(helm_bin: Path) -> None:
    out = _helm(helm_bin, "lint", "--strict", str(CHART))
    assert "0 chart(s) failed" in out


@pytest.mark.helm
def test_kube_version_constraint_is_enforced(helm_bin: Path) -> None:
    # Proves the helm build's k8s capability ldflags: 1.36 passes, an old cluster is refused.
    res = subprocess.run(
        [str(helm_bin), "template", "rls", str(CHART), "--kube-version", "1.29.0"],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert res.returncode != 0 and "kubeVersion" in res.stderr


@pytest.mark.helm
def test_template_renders_expected_objects(helm_bin: Path) -> None:
    docs = _render(helm_bin)
    kinds = sorted((d["kind"], d["metadata"]["name"]) for d in docs)
    per_service = [
        (kind, f"rls-rlstream-{svc}")
        for svc in ("curator", "grader", "ingest")
        for kind in ("Deployment", "PodDisruptionBudget", "Service", "ServiceAccount")
    ]
    assert kinds == sorted(
        [
            ("ConfigMap", "rls-rlstream-config"),
            ("ConfigMap", "rls-rlstream-training"),
            ("NetworkPolicy", "rls-rlstream"),
            ("PersistentVolumeClaim", "rls-rlstream-artifacts"),
            ("Pod", "rls-rlstream-test-health"),
            ("Role", "rls-rlstream-job-launcher"),
            ("RoleBinding", "rls-rlstream-job-launcher"),
            ("ServiceAccount", "rls-rlstream-trainer"),
            *per_service,
        ]
    )
    for d in docs:
        if d["kind"] == "Deployment":
            pod = d["spec"]["template"]["spec"]
            c = pod["containers"][0]
            assert c["livenessProbe"]["httpGet"]["path"] == "/healthz"
            assert c["readinessProbe"]["httpGet"]["path"] == "/readyz"
            # Hardened: non-root, read-only root, no capabilities, RuntimeDefault seccomp.
            assert pod["securityContext"]["runAsNonRoot"] is True
            assert pod["securityContext"]["seccompProfile"] == {"type": "RuntimeDefault"}
            sc = c["securityContext"]
            assert sc["readOnlyRootFilesystem"] is True and sc["capabilities"]["drop"] == ["ALL"]
            assert sc["allowPrivilegeEscalation"] is False
            component = d["metadata"]["labels"]["app.kubernetes.io/component"]
            assert pod["serviceAccountName"] == f"rls-rlstream-{component}"
            # Only the curator (launcher) calls the API server and mounts a token.
            assert pod["automountServiceAccountToken"] is (component == "curator")
    role = next(d for d in docs if d["kind"] == "Role")
    assert {"create", "watch"} <= set(role["rules"][0]["verbs"])
    assert role["rules"][0]["resources"] == ["jobs"]
    # A disabled service really disappears.
    off = _render(helm_bin, "--set", "services.grader.enabled=false")
    assert "rls-rlstream-grader" not in {d["metadata"]["name"] for d in off}


@pytest.mark.helm
def test_optional_parts_render(helm_bin: Path) -> None:
    docs = _render(
        helm_bin,
        "--set", "services.evaluator.enabled=true",
        "--set", "evaluator.inferenceDeployment=vllm-server",
        "--set", "evaluator.rewardConfig=/var/lib/rlstream/rewards.yaml",
        "--set", "evaluator.gateMinPrompts=50",
        "--set", "autoscaling.enabled=true",
        "--set", "training.gpu.enabled=false",
        "--set", "networkPolicy.enabled=false",
    )  # fmt: skip
    by = {(d["kind"], d["metadata"]["name"]): d for d in docs}
    ev = by[("Deployment", "rls-rlstream-evaluator")]["spec"]["template"]["spec"]
    assert ev["containers"][0]["command"][2] == "rlstream.services.evaluator.app:app"
    assert ev["automountServiceAccountToken"] is True
    env = {e["name"]: e.get("value") for e in ev["containers"][0]["env"]}
    assert env["RLSTREAM_REWARD_CONFIG"] == "/var/lib/rlstream/rewards.yaml"
    assert (env["RLSTREAM_GATE_MIN_PROMPTS"], env["RLSTREAM_EVAL_HELDOUT_CAP"]) == ("50", "500")
    promoter = by[("Role", "rls-rlstream-promoter")]
    assert promoter["rules"] == [
        {
            "apiGroups": ["apps"],
            "resources": ["deployments"],
            "resourceNames": ["vllm-server"],
            "verbs": ["get", "patch"],
        }
    ]
    hpa = by[("HorizontalPodAutoscaler", "rls-rlstream-grader")]
    assert hpa["spec"]["metrics"][0]["external"]["metric"]["name"] == "kafka_consumergroup_lag"
    assert "replicas" not in by[("Deployment", "rls-rlstream-grader")]["spec"]
    training = by[("ConfigMap", "rls-rlstream-training")]["data"]
    assert training["RLSTREAM_K8S_GPUS"] == "0" and training["RLSTREAM_K8S_TOLERATIONS"] == "[]"
    assert training["RLSTREAM_K8S_ARTIFACT_PVC"] == "rls-rlstream-artifacts"
    assert training["RLSTREAM_K8S_SERVICE_ACCOUNT"] == "rls-rlstream-trainer"
    assert ("NetworkPolicy", "rls-rlstream") not in by


@pytest.mark.helm
def test_a_given_secret_makes_the_dsn_required(helm_bin: Path) -> None:
    """With existingSecret the services must not fall back to an embedded PostgreSQL when
    its key is misnamed; without it (a demo) they may."""

    def envs(*extra: str) -> list[dict[str, Any]]:
        deps = [d for d in _render(helm_bin, *extra) if d["kind"] == "Deployment"]
        assert deps
        return [
            {
                e["name"]: e.get("value")
                for e in d["spec"]["template"]["spec"]["containers"][0]["env"]
            }
            for d in deps
        ]

    assert all(
        e.get("RLSTREAM_REQUIRE_POSTGRES_DSN") == "true" for e in envs("--set", "existingSecret=db")
    )
    assert all("RLSTREAM_REQUIRE_POSTGRES_DSN" not in e for e in envs())


@pytest.mark.helm
def test_values_schema_rejects_unknown_and_bad_values(helm_bin: Path) -> None:
    for bad in ("imag.tag=x", "services.bogus.enabled=true", "config.logLevel=LOUD",
                "training.jobPrefix=Bad_Prefix", "http.port=0",
                "evaluator.gateMinPrompts=0"):  # fmt: skip
        res = subprocess.run(
            [str(helm_bin), "template", "rls", str(CHART), "--set", bad],
            capture_output=True, text=True, timeout=60,
        )  # fmt: skip
        assert res.returncode != 0 and "values don't meet the specifications" in res.stderr, bad


@pytest.mark.helm
def test_template_validates_strict(helm_bin: Path, tmp_path: Path) -> None:
    out = _helm(helm_bin, "template", "rls", str(CHART))
    manifest = tmp_path / "all.yaml"
    manifest.write_text(out)
    res = subprocess.run(
        [VALIDATE, "--strict", "-k", "1.36.0", str(manifest)],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert res.returncode == 0, res.stdout + res.stderr
    # And the validator really validates: a typo'd field must be rejected.
    bad = tmp_path / "bad.yaml"
    bad.write_text(out.replace("replicas:", "replicaz:", 1))
    res_bad = subprocess.run(
        [VALIDATE, "--strict", "-k", "1.36.0", str(bad)],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert res_bad.returncode != 0


@pytest.mark.helm
@pytest.mark.k8s
def test_helm_install_into_test_apiserver(helm_bin: Path, kube: Any) -> None:
    ns = f"helm-{uuid.uuid4().hex[:6]}"
    env = {**os.environ, "KUBECONFIG": str(kube.kubeconfig)}
    _helm(helm_bin, "install", "rls", str(CHART), "--namespace", ns, "--create-namespace", env=env)
    status = _helm(helm_bin, "status", "rls", "--namespace", ns, "-o", "json", env=env)
    assert '"status":"deployed"' in status.replace(" ", "")
    # The objects are really in the API server, and the launcher SA may create Jobs there.
    code, body = kube.get(f"/apis/apps/v1/namespaces/{ns}/deployments")
    assert code == 200
    names = {d["metadata"]["name"] for d in yaml.safe_load(body)["items"]}
    assert names == {"rls-rlstream-ingest", "rls-rlstream-grader", "rls-rlstream-curator"}
    curator = f"system:serviceaccount:{ns}:rls-rlstream-curator"
    assert _can_i(kube, ns, curator, "create", "jobs") is True
    assert _can_i(kube, ns, curator, "create", "secrets") is False
    grader = f"system:serviceaccount:{ns}:rls-rlstream-grader"
    assert _can_i(kube, ns, grader, "create", "jobs") is False


def _can_i(kube: Any, ns: str, user: str, verb: str, resource: str) -> bool:
    import json
    import ssl
    import urllib.request

    group = "batch" if resource == "jobs" else ""
    body = {
        "apiVersion": "authorization.k8s.io/v1",
        "kind": "SubjectAccessReview",
        "spec": {
            "user": user,
            "groups": [
                "system:serviceaccounts",
                f"system:serviceaccounts:{ns}",
                "system:authenticated",
            ],
            "resourceAttributes": {
                "namespace": ns,
                "verb": verb,
                "group": group,
                "resource": resource,
            },
        },
    }
    ctx = ssl.create_default_context()
    ctx.check_hostname = False
    ctx.verify_mode = ssl.CERT_NONE
    req = urllib.request.Request(
        kube.server + "/apis/authorization.k8s.io/v1/subjectaccessreviews",
        data=json.dumps(body).encode(),
        headers={"Authorization": f"Bearer {kube.token}", "Content-Type": "application/json"},
        method="POST",
    )
    with urllib.request.urlopen(req, context=ctx, timeout=10) as r:
        return bool(json.loads(r.read())["status"].get("allowed", False))


@pytest.mark.helm
def test_chart_runs_the_real_service_apps_and_probes_their_health_server(helm_bin: Path) -> None:
    import importlib.util

    from rlstream.delivery.runtime import ServiceSettings

    deployments = [d for d in _render(helm_bin) if d["kind"] == "Deployment"]
    components = {d["metadata"]["labels"]["app.kubernetes.io/component"] for d in deployments}
    assert components == {"ingest", "grader", "curator"}
    for d in deployments:
        [c] = d["spec"]["template"]["spec"]["containers"]
        assert c["command"][:2] == ["faststream", "run"]
        module = c["command"][2].split(":")[0]
        assert importlib.util.find_spec(module) is not None, module
        env = {e["name"]: e["value"] for e in c["env"]}
        port = int(env["RLSTREAM_HEALTH_PORT"])
        assert c["ports"][0]["containerPort"] == port
        settings = ServiceSettings(health_port=port)
        assert settings.health_port == port
        assert c["livenessProbe"]["httpGet"]["path"] == "/healthz"
        assert c["readinessProbe"]["httpGet"]["path"] == "/readyz"
