"""The chart's ServiceMonitor and PrometheusRule validate against prometheus-operator's
real CRDs (v0.93.0, from its Go module: tools/harness/ensure-promcrds.sh), installed on the
harness kube-apiserver; a typo'd field or a malformed duration is refused, so the check
has teeth. The dashboard ConfigMap is valid JSON with the sidecar's label."""

from __future__ import annotations

import copy
import json
import subprocess
import uuid
from pathlib import Path
from typing import Any

import pytest
import yaml
from kube_api import Api
from promcrds import install_crds

pytestmark = [pytest.mark.helm, pytest.mark.k8s]

CHART = Path(__file__).resolve().parents[3] / "charts" / "rlstream"
VALUES = {
    "monitoring": {
        "serviceMonitor": {"enabled": True, "labels": {"release": "kube-prometheus-stack"}},
        "prometheusRule": {"enabled": True},
        "dashboard": {"enabled": True},
    }
}


def _render(helm_bin: Path, ns: str) -> dict[str, dict[str, Any]]:
    res = subprocess.run(
        [str(helm_bin), "template", "rls", str(CHART), "--namespace", ns, "--values", "-"],
        input=json.dumps(VALUES), capture_output=True, text=True, timeout=120,
    )  # fmt: skip
    assert res.returncode == 0, res.stderr
    docs = [d for d in yaml.safe_load_all(res.stdout) if d]
    return {d["kind"]: d for d in docs if d["kind"] in ("ServiceMonitor", "PrometheusRule")} | {
        "dashboard": next(d for d in docs if d["metadata"]["name"] == "rls-rlstream-dashboard")
    }


def _create(api: Api, ns: str, obj: dict[str, Any]) -> tuple[int, Any]:
    plural = {"ServiceMonitor": "servicemonitors", "PrometheusRule": "prometheusrules"}
    path = (
        f"/apis/monitoring.coreos.com/v1/namespaces/{ns}/{plural[obj['kind']]}"
        "?dryRun=All&fieldValidation=Strict"
    )
    return api.call("POST", path, obj)


def test_monitoring_objects_validate_against_the_real_crds(kube: Any, helm_bin: Path) -> None:
    api = Api(kube.server, kube.token)
    install_crds(api)
    ns = f"mon-{uuid.uuid4().hex[:6]}"
    api.ok("POST", "/api/v1/namespaces", {"metadata": {"name": ns}})
    objs = _render(helm_bin, ns)
    for kind in ("ServiceMonitor", "PrometheusRule"):
        code, body = _create(api, ns, objs[kind])
        assert code == 201, (kind, body)
    rule = objs["PrometheusRule"]
    alerts = {r["alert"] for g in rule["spec"]["groups"] for r in g["rules"]}
    assert {
        "RlstreamConsumerLagHigh",
        "RlstreamDeadLetterRateHigh",
        "RlstreamPartitionStalled",
        "RlstreamUnreadableRecords",
    } <= alerts
    # the validation is real: an unknown field and a malformed duration are refused
    typo = copy.deepcopy(rule)
    typo["spec"]["groups"][0]["rules"][0]["exprr"] = typo["spec"]["groups"][0]["rules"][0].pop(
        "expr"
    )
    code, body = _create(api, ns, typo)
    assert code in (400, 422) and "exprr" in json.dumps(body), body
    bad = copy.deepcopy(objs["ServiceMonitor"])
    bad["spec"]["endpoints"][0]["interval"] = "30 seconds"
    code, body = _create(api, ns, bad)
    assert code == 422 and "interval" in json.dumps(body), body
    dash = objs["dashboard"]
    assert dash["metadata"]["labels"]["grafana_dashboard"] == "1"
    [(name, text)] = dash["data"].items()
    board = json.loads(text)
    assert name == "rlstream-rls.json" and board["uid"] == "rlstream-rls"
    exprs = " ".join(t["expr"] for p in board["panels"] for t in p["targets"])
    for metric in ("rlstream_consumer_lag", "rlstream_partition_stall_seconds"):
        assert metric in exprs
    api.call("DELETE", f"/api/v1/namespaces/{ns}")
