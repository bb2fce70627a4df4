"""Helpers for the launcher tests on the harness kube-apiserver (no controllers run there,
so a test moves a Job forward by patching its /status, as the Job controller would)."""

from __future__ import annotations

import asyncio
import time
import uuid
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import yaml
from aiokafka import AIOKafkaConsumer, TopicPartition
from lightkube import AsyncClient, KubeConfig
from lightkube.models.meta_v1 import ObjectMeta
from lightkube.resources.batch_v1 import Job
from lightkube.resources.core_v1 import Namespace
from lightkube.types import PatchType


def admin(kube: Any) -> AsyncClient:
    return AsyncClient(KubeConfig.from_file(kube.kubeconfig))


async def namespace(client: AsyncClient, prefix: str = "lk") -> str:
    ns = f"{prefix}-{uuid.uuid4().hex[:6]}"
    await client.create(Namespace(metadata=ObjectMeta(name=ns)))
    return ns


def _ts(t: datetime) -> str:
    return t.strftime("%Y-%m-%dT%H:%M:%SZ")


async def finish(client: AsyncClient, name: str, ns: str, ok: bool, reason: str = "") -> None:
    """Patch the Job's status the way the Job controller ends it (1.31+ condition order)."""
    now = datetime.now(UTC)
    start = _ts(now - timedelta(seconds=5))
    t = _ts(now)
    if ok:
        status = {
            "startTime": start,
            "completionTime": t,
            "succeeded": 1,
            "conditions": [
                {"type": "SuccessCriteriaMet", "status": "True", "lastTransitionTime": t},
                {"type": "Complete", "status": "True", "lastTransitionTime": t},
            ],
        }
    else:
        status = {
            "startTime": start,
            "failed": 1,
            "conditions": [
                {"type": "FailureTarget", "status": "True", "lastTransitionTime": t,
                 "reason": reason, "message": "Job was active longer than specified deadline"},
                {"type": "Failed", "status": "True", "lastTransitionTime": t,
                 "reason": reason, "message": "Job was active longer than specified deadline"},
            ],
        }  # fmt: skip
    await client.patch(
        Job.Status, name, {"status": status}, namespace=ns, patch_type=PatchType.MERGE
    )


async def start(client: AsyncClient, name: str, ns: str) -> None:
    status = {"startTime": _ts(datetime.now(UTC)), "active": 1}
    await client.patch(
        Job.Status, name, {"status": status}, namespace=ns, patch_type=PatchType.MERGE
    )


async def sa_kubeconfig(kube: Any, client: AsyncClient, ns: str, sa: str, out: Path) -> Path:
    """A kubeconfig that authenticates as ServiceAccount ``sa`` by a bound token."""
    from lightkube.models.authentication_v1 import TokenRequestSpec
    from lightkube.resources.core_v1 import ServiceAccount

    req = ServiceAccount.Token(
        metadata=ObjectMeta(name=sa, namespace=ns),
        spec=TokenRequestSpec(audiences=[kube.server], expirationSeconds=3600),
    )
    tok = await client.create(req, sa, namespace=ns)
    token = tok.status.token
    cfg = {
        "apiVersion": "v1",
        "kind": "Config",
        "clusters": [
            {"name": "t", "cluster": {"server": kube.server, "insecure-skip-tls-verify": True}}
        ],
        "users": [{"name": sa, "user": {"token": token}}],
        "contexts": [{"name": sa, "context": {"cluster": "t", "user": sa, "namespace": ns}}],
        "current-context": sa,
    }
    out.write_text(yaml.safe_dump(cfg))
    out.chmod(0o600)
    return out


async def read_topic(bootstrap: str, topic: str, want: int, timeout: float = 30.0) -> list[Any]:
    """Records of ``topic`` from the beginning, until ``want`` arrived or ``timeout``."""
    cons = AIOKafkaConsumer(bootstrap_servers=bootstrap, enable_auto_commit=False, group_id=None)
    await cons.start()
    try:
        deadline = time.monotonic() + timeout
        parts: set[int] = set()
        while not parts and time.monotonic() < deadline:
            await cons._client.force_metadata_update()
            parts = cons.partitions_for_topic(topic) or set()
        tps = [TopicPartition(topic, p) for p in sorted(parts)]
        cons.assign(tps)
        await cons.seek_to_beginning(*tps)
        out: list[Any] = []
        while len(out) < want and time.monotonic() < deadline:
            for recs in (await cons.getmany(timeout_ms=300)).values():
                out.extend(recs)
        await asyncio.sleep(0)
        return out
    finally:
        await cons.stop()


CHART = Path(__file__).resolve().parents[3] / "charts" / "rlstream"


def chart_launcher_rbac(helm_bin: Path, ns: str) -> tuple[str, list[Any]]:
    """From the rendered chart: the Role that grants creating Jobs, its RoleBinding and the
    ServiceAccount bound to it (nothing else), and that ServiceAccount's name."""
    import subprocess

    from lightkube import codecs
    from lightkube.models.meta_v1 import ObjectMeta as Meta
    from lightkube.resources.core_v1 import ServiceAccount

    out = subprocess.run(
        [str(helm_bin), "template", "rls", str(CHART), "--namespace", ns],
        capture_output=True, text=True, timeout=120, check=True,
    ).stdout  # fmt: skip
    docs = [d for d in yaml.safe_load_all(out) if d]
    role = next(
        d for d in docs
        if d["kind"] == "Role"
        and any("jobs" in r.get("resources", []) and "create" in r.get("verbs", [])
                for r in d["rules"])
    )  # fmt: skip
    binding = next(
        d for d in docs
        if d["kind"] == "RoleBinding" and d["roleRef"]["name"] == role["metadata"]["name"]
    )  # fmt: skip
    [subject] = binding["subjects"]
    sa = str(subject["name"])
    sa_doc = next(
        (d for d in docs if d["kind"] == "ServiceAccount" and d["metadata"]["name"] == sa), None
    )
    sa_obj = codecs.from_dict(sa_doc) if sa_doc else ServiceAccount(metadata=Meta(name=sa))
    objs = [sa_obj, codecs.from_dict(role), codecs.from_dict(binding)]
    for obj in objs:
        obj.metadata.namespace = ns
    return sa, objs


async def apply_chart_launcher_rbac(
    helm_bin: Path, client: AsyncClient, ns: str, only_account: bool = False
) -> str:
    """Apply :func:`chart_launcher_rbac`'s objects (or only the ServiceAccount); 409s are
    fine (applied before). Returns the ServiceAccount's name."""
    from lightkube import ApiError

    sa, objs = chart_launcher_rbac(helm_bin, ns)
    for obj in objs[:1] if only_account else objs:
        try:
            await client.create(obj)
        except ApiError as e:
            if e.status.code != 409:
                raise
    return sa
