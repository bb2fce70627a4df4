"""Install the chart on the harness cluster with the images the harness built (shared by the
chart and end-to-end tests)."""

from __future__ import annotations

import json
import os
import subprocess
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from kube_api import Api

from rlstream_testkit.stack import TEST_PII_KEY

ROOT = Path(__file__).resolve().parents[3]
CHART = ROOT / "charts" / "rlstream"


@dataclass
class Release:
    api: Api
    ns: str
    name: str
    values: Path
    helm_bin: Path
    kubeconfig: Path
    dsn: str

    def helm(self, *args: str, check: bool = True, timeout: float = 600) -> Any:
        env = {**os.environ, "KUBECONFIG": str(self.kubeconfig)}
        res = subprocess.run(
            [str(self.helm_bin), *args, "-n", self.ns], env=env, capture_output=True,
            text=True, timeout=timeout,
        )  # fmt: skip
        if check:
            assert res.returncode == 0, f"helm {' '.join(args)}:\n{res.stdout}\n{res.stderr}"
        return res

    def uninstall(self) -> None:
        self.helm("uninstall", self.name, "--wait", "--timeout", "2m", check=False)
        self.api.call("DELETE", f"/api/v1/namespaces/{self.ns}")
        self.api.call("DELETE", f"/api/v1/persistentvolumes/{self.ns}-artifacts")


def _split(image: str) -> tuple[str, str]:
    repo, _, tag = image.rpartition(":")
    return repo, tag


def _merge(base: dict[str, Any], extra: dict[str, Any]) -> dict[str, Any]:
    out = dict(base)
    for k, v in extra.items():
        out[k] = _merge(out[k], v) if isinstance(v, dict) and isinstance(out.get(k), dict) else v
    return out


def install_chart(
    cluster: Any,
    kafka: Any,
    postgres: Any,
    helm_bin: Path,
    tmp_path_factory: Any,
    ns: str,
    name: str,
    extra_values: dict[str, Any],
    prepare: Callable[[Api, str], None] | None = None,
) -> Release:
    """Namespace, DB Secret, a static hostPath PV for the artifact PVC (no provisioner on
    the test node), ``prepare(api, dsn)`` (more objects the values refer to), then `helm
    install --wait` with pullPolicy Never and the GPU limit off."""
    api = Api(cluster.kube.server, cluster.kube.token)
    api.ok("POST", "/api/v1/namespaces", {"metadata": {"name": ns}})
    dsn = postgres.create_database(f"rlstream_{ns.replace('-', '_')}")
    api.ok(
        "POST",
        f"/api/v1/namespaces/{ns}/secrets",
        {
            "metadata": {"name": "rls-db"},
            "stringData": {"RLSTREAM_POSTGRES_DSN": dsn, "RLSTREAM_PII_KEY": TEST_PII_KEY},
        },
    )
    art = tmp_path_factory.mktemp(f"artifacts-{ns}")
    os.chown(art, 10001, 10001)
    api.ok(
        "POST",
        "/api/v1/persistentvolumes",
        {
            "metadata": {"name": f"{ns}-artifacts"},
            "spec": {
                "capacity": {"storage": "1Gi"},
                "accessModes": ["ReadWriteOnce"],
                "storageClassName": "",
                "hostPath": {"path": str(art), "type": "Directory"},
                "claimRef": {"namespace": ns, "name": f"{name}-rlstream-artifacts"},
            },
        },
    )
    img_repo, img_tag = _split(cluster.images["RLSTREAM_IMAGE"])
    trainer = cluster.images.get("TRAINER_IMAGE") or cluster.images["RLSTREAM_IMAGE"]
    tr_repo, tr_tag = _split(trainer)
    values = {
        "image": {"repository": img_repo, "tag": img_tag, "pullPolicy": "Never"},
        "config": {"kafkaBootstrap": kafka.bootstrap},
        "existingSecret": "rls-db",
        "training": {
            "image": {"repository": tr_repo, "tag": tr_tag, "pullPolicy": "Never"},
            "gpu": {"enabled": False},
            "cpu": "1",
            "memory": "3Gi",
            "shmSize": "256Mi",
        },
        "artifacts": {"persistence": {"storageClassName": "-", "size": "1Gi"}},
    }
    if prepare is not None:
        prepare(api, dsn)
    vf = tmp_path_factory.mktemp(f"values-{ns}") / "values.json"
    vf.write_text(json.dumps(_merge(values, extra_values)))
    rel = Release(api, ns, name, vf, helm_bin, cluster.kube.kubeconfig, dsn)
    rel.helm("install", name, str(CHART), "-f", str(vf), "--wait", "--timeout", "6m")
    return rel
