"""The chart's optional `rlstream serve` Deployment (issue 21), by `helm template`: off by
default it renders nothing; on, a hardened Deployment + Service whose command `rlstream
serve` itself accepts, probed on /healthz and /readyz, logging to the raw topic with the
services' Kafka settings, and the evaluator's deploy target wired to it; the schema and the
template refuse what cannot work."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
import typer
import yaml

from rlstream.settings import Settings
from rlstream.settings_check import known_names

pytestmark = pytest.mark.helm

CHART = Path(__file__).resolve().parents[3] / "charts" / "rlstream"
VALIDATE = str(Path(sys.executable).parent / "kubernetes-validate")
ON: dict[str, Any] = {
    "serve": {
        "enabled": True,
        "model": "champion",
        "agent": "support-bot",
        "adminToken": {"secretName": "serve-admin", "key": "token"},
        "ingressFrom": [{"namespaceSelector": {"matchLabels": {"team": "apps"}}}],
    },
    "services": {"evaluator": {"enabled": True}},
    "existingSecret": {"name": "corp-rlstream", "keys": {"kafkaPassword": "kafka-pw"}},
    "kafka": {"security": {"protocol": "SASL_SSL", "saslMechanism": "SCRAM-SHA-512"}},
    "monitoring": {"serviceMonitor": {"enabled": True}},
}


def _template(helm_bin: Path, values: dict[str, Any]) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [str(helm_bin), "template", "rls", str(CHART), "--namespace", "ml", "--values", "-"],
        input=json.dumps(values), capture_output=True, text=True, timeout=120,
    )  # fmt: skip


def render(helm_bin: Path, values: dict[str, Any]) -> dict[tuple[str, str], dict[str, Any]]:
    res = _template(helm_bin, values)
    assert res.returncode == 0, res.stderr
    return {(d["kind"], d["metadata"]["name"]): d for d in yaml.safe_load_all(res.stdout) if d}


def _env(container: dict[str, Any]) -> dict[str, Any]:
    return {e["name"]: e.get("value", e.get("valueFrom")) for e in container.get("env", [])}


def _container(docs: dict, name: str) -> dict[str, Any]:
    [c] = docs[("Deployment", name)]["spec"]["template"]["spec"]["containers"]
    return c


@pytest.fixture(scope="module")
def on(helm_bin: Path) -> dict[tuple[str, str], dict[str, Any]]:
    return render(helm_bin, ON)


def test_disabled_by_default_renders_no_serve_objects(helm_bin: Path) -> None:
    docs = render(helm_bin, {"services": {"evaluator": {"enabled": True}}})
    assert not [key for key in docs if "serve" in key[1]]
    assert "RLSTREAM_DEPLOY_TARGET" not in _env(_container(docs, "rls-rlstream-evaluator"))
    egress = docs[("NetworkPolicy", "rls-rlstream")]["spec"]["egress"]
    assert [p["port"] for p in egress[1]["ports"]] == [8080]


def test_serve_deployment_is_hardened_probed_and_runs_rlstream_serve(on: dict) -> None:
    dep = on[("Deployment", "rls-rlstream-serve")]
    assert dep["spec"]["replicas"] == 1
    pod = dep["spec"]["template"]["spec"]
    c = _container(on, "rls-rlstream-serve")
    assert c["livenessProbe"]["httpGet"] == {"path": "/healthz", "port": "http"}
    assert c["readinessProbe"]["httpGet"] == {"path": "/readyz", "port": "http"}
    assert c["ports"] == [{"name": "http", "containerPort": 8000}]
    assert pod["securityContext"]["runAsNonRoot"] is True
    assert pod["securityContext"]["seccompProfile"] == {"type": "RuntimeDefault"}
    sc = c["securityContext"]
    assert sc["readOnlyRootFilesystem"] is True and sc["capabilities"]["drop"] == ["ALL"]
    assert sc["allowPrivilegeEscalation"] is False
    assert pod["serviceAccountName"] == "rls-rlstream-serve"
    assert pod["automountServiceAccountToken"] is False
    assert on[("ServiceAccount", "rls-rlstream-serve")]["automountServiceAccountToken"] is False
    assert c["image"] == "rlstream-gpu:0.1.0"  # training.image: torch + starlette/uvicorn
    cmd = c["command"]
    assert cmd[:3] == ["rlstream", "serve", "champion"] and cmd[-1] == "--log-kafka"
    assert cmd[cmd.index("--agent") + 1] == "support-bot"
    assert cmd[cmd.index("--host") + 1] == "0.0.0.0" and cmd[cmd.index("--port") + 1] == "8000"
    # The registry's adapter paths are on the artifacts claim, mounted read-only where the
    # evaluator and the training Jobs see them.
    mount = next(m for m in c["volumeMounts"] if m["name"] == "data")
    assert mount == {"name": "data", "mountPath": "/var/lib/rlstream", "readOnly": True}
    data = next(v for v in pod["volumes"] if v["name"] == "data")
    assert data["persistentVolumeClaim"] == {
        "claimName": "rls-rlstream-artifacts",
        "readOnly": True,
    }


def test_the_command_is_one_rlstream_serve_parses(on: dict) -> None:
    from rlstream.services.cli.main import app

    cli = typer.main.get_command(app)
    args = _container(on, "rls-rlstream-serve")["command"][1:]
    ctx = cli.make_context("rlstream", list(args), resilient_parsing=False)
    sub = ctx.command.get_command(ctx, args[0])  # type: ignore[attr-defined]
    assert sub is not None
    params = sub.make_context("serve", list(args[1:])).params
    assert params["model"] == "champion" and params["port"] == 8000
    assert params["log_kafka"] is True and params["no_log"] is False
    assert (params["device"], params["max_tokens"], params["temperature"]) == ("cpu", 128, 0.0)


def test_serve_logs_to_kafka_with_the_services_settings_and_secret(on: dict) -> None:
    c = _container(on, "rls-rlstream-serve")
    ingest = _container(on, "rls-rlstream-ingest")
    assert {"configMapRef": {"name": "rls-rlstream-config"}} in c["envFrom"]
    env = _env(c)
    assert env["RLSTREAM_KAFKA_SASL_PASSWORD"] == _env(ingest)["RLSTREAM_KAFKA_SASL_PASSWORD"]
    assert env["RLSTREAM_REQUIRE_POSTGRES_DSN"] == "true"
    assert env["RLSTREAM_KAFKA_CLIENT_ID"] == "rlstream-serve"
    token = {"secretKeyRef": {"name": "serve-admin", "key": "token"}}
    assert env["RLSTREAM_SERVE_ADMIN_TOKEN"] == token
    config = on[("ConfigMap", "rls-rlstream-config")]["data"]
    assert config["RLSTREAM_KAFKA_SECURITY_PROTOCOL"] == "SASL_SSL"
    ours = {n for n in env if n.startswith("RLSTREAM_")} | set(config)
    assert ours <= known_names(Settings.model_fields), ours - known_names(Settings.model_fields)


def test_evaluator_hot_swaps_the_serve_service(on: dict) -> None:
    env = _env(_container(on, "rls-rlstream-evaluator"))
    assert env["RLSTREAM_DEPLOY_TARGET"] == "serve"
    assert env["RLSTREAM_DEPLOY_SERVE_URL"] == "http://rls-rlstream-serve:8000"
    assert env["RLSTREAM_SERVE_ADMIN_TOKEN"] == {
        "secretKeyRef": {"name": "serve-admin", "key": "token"}
    }
    assert "RLSTREAM_DEPLOY_DEPLOYMENT" not in env
    assert ("Role", "rls-rlstream-promoter") not in on  # no API rights needed for a swap
    svc = on[("Service", "rls-rlstream-serve")]["spec"]
    assert svc["type"] == "ClusterIP"
    assert svc["ports"] == [{"name": "http", "port": 8000, "targetPort": "http"}]
    labels = on[("Deployment", "rls-rlstream-serve")]["spec"]["template"]["metadata"]["labels"]
    assert all(labels[k] == v for k, v in svc["selector"].items())


def test_network_policy_and_service_monitor_reach_it(on: dict) -> None:
    policy = on[("NetworkPolicy", "rls-rlstream")]["spec"]
    assert policy["ingress"][0]["ports"] == [{"port": "http", "protocol": "TCP"}]
    assert {"port": 8000, "protocol": "TCP"} in policy["egress"][1]["ports"]  # the evaluator
    clients = on[("NetworkPolicy", "rls-rlstream-serve")]["spec"]
    assert clients["podSelector"]["matchLabels"]["app.kubernetes.io/component"] == "serve"
    assert clients["ingress"][0]["from"] == ON["serve"]["ingressFrom"]
    monitor = on[("ServiceMonitor", "rls-rlstream")]["spec"]
    svc_labels = on[("Service", "rls-rlstream-serve")]["metadata"]["labels"]
    assert all(svc_labels[k] == v for k, v in monitor["selector"]["matchLabels"].items())
    assert monitor["endpoints"][0]["port"] == "http"
    script = on[("Pod", "rls-rlstream-test-health")]["spec"]["containers"][0]["args"][0]
    assert '("rls-rlstream-serve", 8000, "/readyz")' in script


def test_image_override_and_folder_model(helm_bin: Path) -> None:
    docs = render(
        helm_bin,
        {
            "serve": {
                "enabled": True,
                "model": "/var/lib/rlstream/runs/run-1",
                "log": "none",
                "port": 8080,
                "image": {"repository": "ml/serve", "tag": "1.2", "pullPolicy": "Always"},
            },
            "artifacts": {"persistence": {"enabled": False}},
        },
    )
    c = _container(docs, "rls-rlstream-serve")
    assert c["image"] == "ml/serve:1.2" and c["imagePullPolicy"] == "Always"
    assert c["command"][2] == "/var/lib/rlstream/runs/run-1" and c["command"][-1] == "--no-log"
    assert "RLSTREAM_REQUIRE_POSTGRES_DSN" not in _env(c)
    egress = docs[("NetworkPolicy", "rls-rlstream")]["spec"]["egress"]
    assert [p["port"] for p in egress[1]["ports"]] == [8080]  # serve on the services' port
    assert ("NetworkPolicy", "rls-rlstream-serve") not in docs  # no ingressFrom


def test_lint_and_1_36_schemas_accept_it(helm_bin: Path, on: dict, tmp_path: Path) -> None:
    values = tmp_path / "serve.yaml"
    values.write_text(json.dumps(ON))
    res = subprocess.run(
        [str(helm_bin), "lint", "--strict", str(CHART), "--values", str(values)],
        capture_output=True, text=True, timeout=120,
    )  # fmt: skip
    assert res.returncode == 0 and "0 chart(s) failed" in res.stdout, res.stdout + res.stderr
    core = [d for d in on.values() if not d["apiVersion"].startswith("monitoring.")]
    f = tmp_path / "core.yaml"
    f.write_text(yaml.safe_dump_all(core))
    res = subprocess.run(
        [VALIDATE, "--strict", "-k", "1.36.0", str(f)], capture_output=True, text=True, timeout=120
    )
    assert res.returncode == 0, res.stdout + res.stderr


@pytest.mark.parametrize(
    "bad",
    [
        {"serve": {"log": "jsonl"}},
        {"serve": {"device": "gpu"}},
        {"serve": {"replicas": 2}},  # always one
        {"serve": {"port": 0}},
        {"serve": {"temperature": -1}},
        {"serve": {"adminToken": {"secret": "s"}}},
        {"serve": {"ingressFrom": [{"namespace": "apps"}]}},
        {"serve": {"image": {"repository": "r", "digest": "latest"}}},
        {"serve": {"enabled": "yes"}},
    ],
)
def test_schema_refuses_bad_serve_values(helm_bin: Path, bad: dict[str, Any]) -> None:
    res = _template(helm_bin, bad)
    assert res.returncode != 0 and "values don't meet the specifications" in res.stderr, bad


@pytest.mark.parametrize(
    ("values", "message"),
    [
        (
            {"serve": {"enabled": True}, "evaluator": {"inferenceDeployment": "vllm"}},
            "serve.hotSwap and evaluator.inferenceDeployment",
        ),
        ({"serve": {"enabled": True, "model": "champion"}}, "needs existingSecret"),
    ],
)
def test_template_refuses_what_cannot_work(
    helm_bin: Path, values: dict[str, Any], message: str
) -> None:
    res = _template(helm_bin, values)
    assert res.returncode != 0 and message in res.stderr, res.stderr


def test_hot_swap_off_keeps_the_patched_inference_deployment(helm_bin: Path) -> None:
    docs = render(
        helm_bin,
        {
            "serve": {"enabled": True, "hotSwap": False},
            "services": {"evaluator": {"enabled": True}},
            "evaluator": {"inferenceDeployment": "vllm-server"},
        },
    )
    env = _env(_container(docs, "rls-rlstream-evaluator"))
    assert env["RLSTREAM_DEPLOY_TARGET"] == "kubernetes"
    assert "RLSTREAM_DEPLOY_SERVE_URL" not in env
    assert ("Deployment", "rls-rlstream-serve") in docs
