"""The chart's extension points for a company cluster (issue 19), by `helm template`: every
one set at once reaches the services, the hook Jobs and, through the RLSTREAM_K8S_*
ConfigMap the launcher reads, the training Job (built here by the launcher's own code);
the schema refuses typos; Strimzi topics equal the library's table; every RLSTREAM_*
variable the chart sets is one some rlstream process reads."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
import yaml

from rlstream.events.topic_table import resolve_table
from rlstream.launch import LaunchRequest, LaunchSettings, plan_run
from rlstream.launch.k8s_manifest import job_manifest
from rlstream.settings import Settings
from rlstream.settings_check import known_names

pytestmark = pytest.mark.helm

CHART = Path(__file__).resolve().parents[3] / "charts" / "rlstream"
VALIDATE = str(Path(sys.executable).parent / "kubernetes-validate")
DIGEST = "sha256:" + "a" * 64
TRAINER_DIGEST = "sha256:" + "b" * 64
EVERYTHING: dict[str, Any] = {
    "global": {"imageRegistry": "registry.corp.example"},
    "image": {"repository": "ml/rlstream", "tag": "9.9", "digest": DIGEST},
    "imagePullSecrets": [{"name": "regcred"}],
    "existingSecret": {
        "name": "corp-rlstream",
        "keys": {
            "postgresDsn": "dsn",
            "redisUrl": "redis-url",
            "kafkaUsername": "kafka-user",
            "kafkaPassword": "kafka-password",
        },
    },
    "tls": {"caSecret": "corp-ca"},
    "kafka": {
        "security": {
            "protocol": "SASL_SSL",
            "saslMechanism": "SCRAM-SHA-512",
            "clientCertSecret": "kafka-client",
        }
    },
    "extraEnv": [{"name": "HTTPS_PROXY", "value": "http://proxy:3128"}],
    "extraEnvFrom": [{"configMapRef": {"name": "corp-env"}}],
    "extraVolumes": [{"name": "extra", "emptyDir": {}}],
    "extraVolumeMounts": [{"name": "extra", "mountPath": "/extra"}],
    "podAnnotations": {"sidecar.istio.io/inject": "false"},
    "podLabels": {"team": "ml"},
    "priorityClassName": "rlstream-services",
    "topologySpreadConstraints": [
        {
            "maxSkew": 1,
            "topologyKey": "topology.kubernetes.io/zone",
            "whenUnsatisfiable": "ScheduleAnyway",
        }
    ],
    "nodeSelector": {"pool": "cpu"},
    "tolerations": [{"key": "dedicated", "operator": "Exists", "effect": "NoSchedule"}],
    "affinity": {"podAntiAffinity": {}},
    "serviceAccounts": {"annotations": {"eks.amazonaws.com/role-arn": "arn:aws:iam::1:role/r"}},
    "training": {
        "image": {"repository": "ml/rlstream-gpu", "digest": TRAINER_DIGEST},
        "priorityClassName": "gpu-batch",
        "affinity": {"nodeAffinity": {}},
    },
    "migrations": {"hook": True},
    "topics": {"provision": "hook", "replicationFactor": 1},
    "monitoring": {
        "serviceMonitor": {"enabled": True},
        "prometheusRule": {"enabled": True},
        "dashboard": {"enabled": True},
    },
}
CA_FILE = "/etc/rlstream/ca/ca.crt"


def _template(helm_bin: Path, values: dict[str, Any], *extra: str) -> subprocess.CompletedProcess:
    return subprocess.run(
        [str(helm_bin), "template", "rls", str(CHART), "--namespace", "ml",
         "--values", "-", *extra],
        input=json.dumps(values), capture_output=True, text=True, timeout=120,
    )  # fmt: skip


def render(helm_bin: Path, values: dict[str, Any]) -> dict[tuple[str, str], dict[str, Any]]:
    res = _template(helm_bin, values)
    assert res.returncode == 0, res.stderr
    assert "warning" not in res.stderr.lower(), res.stderr
    return {(d["kind"], d["metadata"]["name"]): d for d in yaml.safe_load_all(res.stdout) if d}


def _env(container: dict[str, Any]) -> dict[str, Any]:
    return {e["name"]: e.get("value", e.get("valueFrom")) for e in container.get("env", [])}


def _secret_ref(key: str) -> dict[str, Any]:
    return {"secretKeyRef": {"name": "corp-rlstream", "key": key}}


def _selected(selector: dict[str, str], labels: dict[str, str]) -> bool:
    return all(labels.get(k) == v for k, v in selector.items())


@pytest.fixture(scope="module")
def everything(helm_bin: Path) -> dict[tuple[str, str], dict[str, Any]]:
    return render(helm_bin, EVERYTHING)


def test_services_get_every_extension_point(everything: dict) -> None:
    deployments = [d for (kind, _), d in everything.items() if kind == "Deployment"]
    assert len(deployments) == 3
    for d in deployments:
        tmpl = d["spec"]["template"]
        pod, [c] = tmpl["spec"], tmpl["spec"]["containers"]
        component = tmpl["metadata"]["labels"]["app.kubernetes.io/component"]
        assert c["image"] == f"registry.corp.example/ml/rlstream@{DIGEST}"
        assert pod["imagePullSecrets"] == [{"name": "regcred"}]
        assert pod["priorityClassName"] == "rlstream-services"
        assert pod["nodeSelector"] == {"pool": "cpu"} and pod["affinity"] == {"podAntiAffinity": {}}
        assert pod["tolerations"][0]["key"] == "dedicated"
        [spread] = pod["topologySpreadConstraints"]
        assert spread["labelSelector"]["matchLabels"]["app.kubernetes.io/component"] == component
        assert tmpl["metadata"]["labels"]["team"] == "ml"
        assert tmpl["metadata"]["annotations"]["sidecar.istio.io/inject"] == "false"
        env = _env(c)
        assert env["RLSTREAM_POSTGRES_DSN"] == _secret_ref("dsn")
        assert env["RLSTREAM_REDIS_URL"] == _secret_ref("redis-url")
        assert env["RLSTREAM_KAFKA_SASL_USERNAME"] == _secret_ref("kafka-user")
        assert env["RLSTREAM_KAFKA_SASL_PASSWORD"] == _secret_ref("kafka-password")
        assert env["RLSTREAM_REQUIRE_POSTGRES_DSN"] == "true"
        assert env["RLSTREAM_MIGRATE_ON_START"] == "false"  # the hook migrates
        assert env["HTTPS_PROXY"] == "http://proxy:3128"
        assert {"configMapRef": {"name": "corp-env"}} in c["envFrom"]
        assert not any("secretRef" in e for e in c["envFrom"])  # per-key form: no envFrom
        mounts = {m["name"]: m["mountPath"] for m in c["volumeMounts"]}
        assert mounts["rlstream-ca"] == "/etc/rlstream/ca" and mounts["extra"] == "/extra"
        assert mounts["rlstream-kafka-client"] == "/etc/rlstream/kafka-client"
        vols = {v["name"]: v for v in pod["volumes"]}
        assert vols["rlstream-ca"]["secret"]["secretName"] == "corp-ca"
        assert vols["rlstream-kafka-client"]["secret"]["secretName"] == "kafka-client"
    config = everything[("ConfigMap", "rls-rlstream-config")]["data"]
    assert config["RLSTREAM_KAFKA_SECURITY_PROTOCOL"] == "SASL_SSL"
    assert config["RLSTREAM_KAFKA_SASL_MECHANISM"] == "SCRAM-SHA-512"
    assert config["RLSTREAM_KAFKA_SSL_CAFILE"] == CA_FILE  # tls.caSecret's bundle
    assert config["RLSTREAM_KAFKA_SSL_CERTFILE"] == "/etc/rlstream/kafka-client/tls.crt"
    assert config["RLSTREAM_KAFKA_SSL_KEYFILE"] == "/etc/rlstream/kafka-client/tls.key"
    for role in ("ingest", "grader", "curator", "trainer"):
        sa = everything[("ServiceAccount", f"rls-rlstream-{role}")]
        assert sa["metadata"]["annotations"] == {
            "eks.amazonaws.com/role-arn": "arn:aws:iam::1:role/r"
        }
    test_pod = everything[("Pod", "rls-rlstream-test-health")]["spec"]
    assert test_pod["containers"][0]["image"] == f"registry.corp.example/ml/rlstream@{DIGEST}"


def test_training_job_gets_them_and_is_selected_by_the_network_policy(
    everything: dict, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The launcher's own code builds the Job from the rendered ConfigMaps (as the curator's
    pod reads them): pull secrets, CA, priority class, secrets per key, and the release
    label the NetworkPolicy selects."""
    for cm in ("rls-rlstream-config", "rls-rlstream-training"):
        for k, v in everything[("ConfigMap", cm)]["data"].items():
            monkeypatch.setenv(k, v)
    monkeypatch.setenv("RLSTREAM_K8S_NAMESPACE", "ml")
    s = LaunchSettings()
    sha = "c" * 64
    req = LaunchRequest(dataset_id=sha, agent="a", reward_spec="outcome", path="/d", sha256=sha)
    job = job_manifest(plan_run(req, runs_dir=s.runs_path()), s)
    tmpl = job["spec"]["template"]
    pod, [c] = tmpl["spec"], tmpl["spec"]["containers"]
    assert c["image"] == f"registry.corp.example/ml/rlstream-gpu@{TRAINER_DIGEST}"
    assert pod["imagePullSecrets"] == [{"name": "regcred"}]
    assert pod["priorityClassName"] == "gpu-batch"
    assert pod["affinity"] == {"nodeAffinity": {}}
    assert tmpl["metadata"]["annotations"] == {"sidecar.istio.io/inject": "false"}
    env = _env(c)
    assert env["RLSTREAM_POSTGRES_DSN"] == _secret_ref("dsn")
    assert env["RLSTREAM_KAFKA_SASL_PASSWORD"] == _secret_ref("kafka-password")
    assert env["RLSTREAM_MIGRATE_ON_START"] == "false"
    assert env["RLSTREAM_IMAGE_DIGEST"] == TRAINER_DIGEST
    mounts = {m["name"]: m["mountPath"] for m in c["volumeMounts"]}
    assert mounts["rlstream-ca"] == "/etc/rlstream/ca" and mounts["extra"] == "/extra"
    assert {"configMapRef": {"name": "rls-rlstream-config"}} in c["envFrom"]  # Kafka TLS
    policy = everything[("NetworkPolicy", "rls-rlstream")]["spec"]
    assert _selected(policy["podSelector"]["matchLabels"], tmpl["metadata"]["labels"])
    assert tmpl["metadata"]["labels"]["team"] == "ml"


def test_hook_jobs_run_before_the_pods_with_inline_settings(everything: dict) -> None:
    migrate = everything[("Job", "rls-rlstream-migrate")]
    topics = everything[("Job", "rls-rlstream-topics")]
    for job, command in ((migrate, ["rlstream", "db", "upgrade"]), (topics, None)):
        ann = job["metadata"]["annotations"]
        assert ann["helm.sh/hook"] == "pre-install,pre-upgrade"
        tmpl = job["spec"]["template"]
        pod, [c] = tmpl["spec"], tmpl["spec"]["containers"]
        if command:
            assert c["command"] == command
        env = _env(c)
        # on install the -config ConfigMap does not exist yet: the settings are inline
        assert c["envFrom"] == [{"configMapRef": {"name": "corp-env"}}]  # extraEnvFrom only
        assert env["RLSTREAM_KAFKA_BOOTSTRAP"] == "kafka:9092"
        assert env["RLSTREAM_KAFKA_SSL_CAFILE"] == CA_FILE
        assert env["RLSTREAM_POSTGRES_DSN"] == _secret_ref("dsn")
        assert env["RLSTREAM_REQUIRE_POSTGRES_DSN"] == "true"
        assert c["image"] == f"registry.corp.example/ml/rlstream@{DIGEST}"
        assert pod["imagePullSecrets"] == [{"name": "regcred"}]
        assert pod["automountServiceAccountToken"] is False
        assert tmpl["metadata"]["labels"]["app.kubernetes.io/instance"] == "rls"
    assert int(migrate["metadata"]["annotations"]["helm.sh/hook-weight"]) < int(
        topics["metadata"]["annotations"]["helm.sh/hook-weight"]
    )
    topic_env = _env(topics["spec"]["template"]["spec"]["containers"][0])
    assert topic_env["RLSTREAM_TOPICS_REPLICATION_FACTOR"] == "1"
    assert (
        "rlstream topics apply" in topics["spec"]["template"]["spec"]["containers"][0]["command"][2]
    )


def test_every_rlstream_variable_the_chart_sets_is_read(everything: dict) -> None:
    """Services refuse unknown RLSTREAM_* variables: the chart must set none."""
    names: set[str] = set()
    for (kind, _), d in everything.items():
        if kind == "ConfigMap" and "dashboard" not in d["metadata"]["name"]:
            names |= set(d["data"])
        if kind in ("Deployment", "Job", "Pod"):
            spec = d["spec"]["template"]["spec"] if kind != "Pod" else d["spec"]
            for c in spec["containers"]:
                names |= {e["name"] for e in c.get("env", [])}
        if kind == "ConfigMap" and d["metadata"]["name"] == "rls-rlstream-training":
            names |= {e["name"] for e in json.loads(d["data"]["RLSTREAM_K8S_EXTRA_ENV"])}
    ours = {n for n in names if n.startswith("RLSTREAM_")}
    assert len(ours) > 30
    assert ours <= known_names(Settings.model_fields), ours - known_names(Settings.model_fields)


def test_everything_validates_against_the_1_36_schemas(everything: dict, tmp_path: Path) -> None:
    core = [d for d in everything.values() if not d["apiVersion"].startswith("monitoring.")]
    f = tmp_path / "core.yaml"
    f.write_text(yaml.safe_dump_all(core))
    res = subprocess.run(
        [VALIDATE, "--strict", "-k", "1.36.0", str(f)], capture_output=True, text=True, timeout=120
    )
    assert res.returncode == 0, res.stdout + res.stderr


def test_defaults_render_none_of_it(helm_bin: Path) -> None:
    docs = render(helm_bin, {})
    kinds = {kind for kind, _ in docs}
    assert not kinds & {"Job", "ServiceMonitor", "PrometheusRule", "KafkaTopic"}
    assert ("ConfigMap", "rls-rlstream-dashboard") not in docs
    config = docs[("ConfigMap", "rls-rlstream-config")]["data"]
    assert not any(k.startswith("RLSTREAM_KAFKA_S") for k in config)  # PLAINTEXT: nothing
    training = docs[("ConfigMap", "rls-rlstream-training")]["data"]
    assert not {k for k in training if "EXTRA" in k or "PULL_SECRETS" in k or "PRIORITY" in k}
    for (kind, _), d in docs.items():
        if kind == "Deployment":
            [c] = d["spec"]["template"]["spec"]["containers"]
            assert c["image"] == "rlstream:0.1.0"
            assert "RLSTREAM_MIGRATE_ON_START" not in _env(c)
            # no Secret: the services may embed a database (a demo; with one they may not)
            assert _env(c)["RLSTREAM_EMBEDDED_POSTGRES"] == "true"


def test_tracing_renders_into_the_config_every_pod_reads(helm_bin: Path) -> None:
    values = {"config": {"tracing": "otlp", "otlpEndpoint": "http://otel-collector:4318"}}
    docs = render(helm_bin, values)
    config = docs[("ConfigMap", "rls-rlstream-config")]["data"]
    assert config["RLSTREAM_TRACING"] == "otlp"
    assert config["RLSTREAM_OTLP_ENDPOINT"] == "http://otel-collector:4318"
    assert {"RLSTREAM_TRACING", "RLSTREAM_OTLP_ENDPOINT"} <= known_names(Settings.model_fields)
    [c] = docs[("Deployment", "rls-rlstream-curator")]["spec"]["template"]["spec"]["containers"]
    assert {"configMapRef": {"name": "rls-rlstream-config"}} in c["envFrom"]
    training = docs[("ConfigMap", "rls-rlstream-training")]["data"]
    assert training["RLSTREAM_K8S_ENV_CONFIGMAP"] == "rls-rlstream-config"  # the Jobs too
    off = render(helm_bin, {})[("ConfigMap", "rls-rlstream-config")]["data"]
    assert "RLSTREAM_TRACING" not in off and "RLSTREAM_OTLP_ENDPOINT" not in off


def test_string_secret_keeps_the_envfrom_form(helm_bin: Path) -> None:
    docs = render(helm_bin, {"existingSecret": "rls-db"})
    dep = docs[("Deployment", "rls-rlstream-ingest")]["spec"]["template"]["spec"]
    assert {"secretRef": {"name": "rls-db"}} in dep["containers"][0]["envFrom"]
    assert "RLSTREAM_EMBEDDED_POSTGRES" not in _env(dep["containers"][0])
    training = docs[("ConfigMap", "rls-rlstream-training")]["data"]
    assert training["RLSTREAM_K8S_ENV_SECRET"] == "rls-db"


@pytest.mark.parametrize(
    "bad",
    [
        {"extraVolume": []},  # a typo'd extension point
        {"serviceAccount": {"annotations": {"a": "b"}}},  # the block is serviceAccounts
        {"existingSecret": {"name": "s", "keys": {"postgresDNS": "dsn"}}},
        {"existingSecret": {"keys": {"postgresDsn": "dsn"}}},  # no name
        {"image": {"repository": "r", "pullPolicy": "Always", "digest": "latest"}},
        {"kafka": {"security": {"protocol": "SASL_SSl"}}},
        {"kafka": {"security": {"saslMechanism": "SCRAM"}}},
        {"topics": {"provision": "yes"}},
        {"topics": {"overrides": {"*": {"config": {"retention.hours": "1"}}}}},
        {"monitoring": {"serviceMonitor": {"enable": True}}},
        {"migrations": {"hooks": True}},
        {"extraEnv": [{"value": "no name"}]},
        {"config": {"tracing": "jaeger"}},
        {"config": {"tracing": False}},  # a bare off in YAML
        {"config": {"otlpEndpoint": "otel-collector:4318"}},  # no scheme
    ],
)
def test_schema_rejects_typos(helm_bin: Path, bad: dict[str, Any]) -> None:
    res = _template(helm_bin, bad)
    assert res.returncode != 0 and "values don't meet the specifications" in res.stderr, bad


def test_hook_needs_a_database_and_strimzi_a_cluster(helm_bin: Path) -> None:
    res = _template(helm_bin, {"migrations": {"hook": True}})
    assert res.returncode != 0 and "migrations.hook needs existingSecret" in res.stderr
    res = _template(helm_bin, {"topics": {"provision": "strimzi"}})
    assert res.returncode != 0 and "topics.strimzi.clusterName" in res.stderr


def test_strimzi_topics_equal_the_library_table(helm_bin: Path) -> None:
    overrides = {"*": {"config": {"retention.ms": 1000}}, "rlstream.scored.v1": {"partitions": 24}}
    docs = render(
        helm_bin,
        {
            "config": {"topicPrefix": "t1."},
            "topics": {
                "provision": "strimzi",
                "replicationFactor": 2,
                "overrides": overrides,
                "strimzi": {"clusterName": "corp", "namespace": "kafka"},
            },
        },
    )
    rendered = {d["spec"]["topicName"]: d for (kind, _), d in docs.items() if kind == "KafkaTopic"}
    expected = resolve_table(overrides, 2, "t1.")
    assert set(rendered) == {s.name for s in expected}
    for spec in expected:
        kt = rendered[spec.name]
        assert kt["metadata"]["labels"]["strimzi.io/cluster"] == "corp"
        assert kt["metadata"]["namespace"] == "kafka"
        assert kt["spec"]["partitions"] == spec.partitions
        assert kt["spec"]["replicas"] == spec.replication_factor
        assert kt["spec"]["config"] == dict(spec.config), spec.name


def _defined_metrics() -> set[str]:
    """The sample names rlstream.observability.metrics exports."""
    from prometheus_client import Counter, Histogram
    from prometheus_client.metrics import MetricWrapperBase

    import rlstream.observability.metrics as m

    out: set[str] = set()
    for v in vars(m).values():
        if not isinstance(v, MetricWrapperBase):
            continue
        name = v._name
        if isinstance(v, Counter):
            out.add(name + "_total")
        elif isinstance(v, Histogram):
            out |= {name + s for s in ("_bucket", "_sum", "_count")}
        else:
            out.add(name)
    return out


def test_alerts_and_dashboard_use_metrics_that_exist(everything: dict) -> None:
    import re

    rule = everything[("PrometheusRule", "rls-rlstream")]["spec"]
    alerts = {r["alert"]: r["expr"] for g in rule["groups"] for r in g["rules"]}
    assert set(alerts) == {
        "RlstreamConsumerLagHigh", "RlstreamDeadLetterRateHigh", "RlstreamPartitionStalled",
        "RlstreamUnreadableRecords", "RlstreamTrainingRunFailed", "RlstreamReleaseOverBudget",
    }  # fmt: skip
    assert "rlstream_partition_stall_seconds" in alerts["RlstreamPartitionStalled"]
    assert 'state="over_budget"' in alerts["RlstreamReleaseOverBudget"]
    board = json.loads(
        next(iter(everything[("ConfigMap", "rls-rlstream-dashboard")]["data"].values()))
    )
    exprs = [*alerts.values(), *(t["expr"] for p in board["panels"] for t in p["targets"])]
    used = {n for e in exprs for n in re.findall(r"\brlstream_[a-z0-9_]+", e)}
    assert "rlstream_build_info" in used and "rlstream_consumer_lag" in used
    assert used <= _defined_metrics(), used - _defined_metrics()
