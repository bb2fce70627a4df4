"""prometheus-operator's ServiceMonitor and PrometheusRule CRDs (v0.93.0, cached from its Go
module by tools/harness/ensure-promcrds.sh) on a harness kube-apiserver."""

from __future__ import annotations

import os
from pathlib import Path

import pytest
import yaml
from kube_api import Api

from rlstream_testkit.paths import cache_dir

CRDS = ("monitoring.coreos.com_servicemonitors.yaml", "monitoring.coreos.com_prometheusrules.yaml")


def crd_dir() -> Path:
    """The cached CRDs; missing, the test skips (fails under CI=true)."""
    d = cache_dir() / "promcrds"
    if not all((d / f).is_file() for f in CRDS):
        msg = f"no prometheus-operator CRDs in {d}: run tools/harness/ensure-promcrds.sh"
        if os.environ.get("CI") == "true" or os.environ.get("RLSTREAM_REQUIRE_ALL_TIERS"):
            pytest.fail(msg)
        pytest.skip(msg)
    return d


def install_crds(api: Api) -> None:
    """Create (or keep) the two CRDs and wait until the apiserver serves them."""
    d = crd_dir()
    for f in CRDS:
        crd = yaml.safe_load((d / f).read_text())
        assert crd["metadata"]["annotations"]["operator.prometheus.io/version"] == "0.93.0"
        code, body = api.call(
            "POST", "/apis/apiextensions.k8s.io/v1/customresourcedefinitions", crd
        )
        assert code in (201, 409), body
        path = f"/apis/apiextensions.k8s.io/v1/customresourcedefinitions/{crd['metadata']['name']}"
        api.wait(
            lambda path=path: any(
                c["type"] == "Established" and c["status"] == "True"
                for c in (api.ok("GET", path).get("status") or {}).get("conditions") or []
            ),
            60,
            f"{f} established",
            every=0.5,
        )
