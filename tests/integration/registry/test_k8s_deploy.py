"""The kubernetes deploy target on the harness kube-apiserver, configured and authorised
exactly as the Helm chart renders it for the evaluator: the patch lands on the one
configured Deployment through the evaluator's ServiceAccount; anything else is 403."""

from __future__ import annotations

import subprocess
import uuid
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest
import yaml
from lightkube import ApiError, AsyncClient, KubeConfig, codecs
from lightkube.models.apps_v1 import DeploymentSpec
from lightkube.models.authentication_v1 import TokenRequestSpec
from lightkube.models.core_v1 import Container, PodSpec, PodTemplateSpec
from lightkube.models.meta_v1 import LabelSelector, ObjectMeta
from lightkube.resources.apps_v1 import Deployment
from lightkube.resources.core_v1 import Namespace, Pod, ServiceAccount
from registry_helpers import RecordingSink, fake_adapter

from rlstream.registry import (
    ANNOTATION_MODEL,
    ENV_MODEL_ID,
    ENV_MODEL_PATH,
    DeployError,
    DeploySettings,
    KubernetesTarget,
    Registry,
    make_target,
)
from rlstream.storage import Store

pytestmark = [pytest.mark.k8s, pytest.mark.helm, pytest.mark.postgres]

CHART = Path(__file__).resolve().parents[3] / "charts" / "rlstream"
INFER = "infer"
SA = "rls-rlstream-evaluator"
ROLE = "rls-rlstream-promoter"


def _deployment(name: str, ns: str) -> Deployment:
    labels = {"app": name}
    return Deployment(
        metadata=ObjectMeta(name=name, namespace=ns),
        spec=DeploymentSpec(
            selector=LabelSelector(matchLabels=labels),
            template=PodTemplateSpec(
                metadata=ObjectMeta(labels=labels),
                spec=PodSpec(containers=[Container(name="server", image="vllm:latest")]),
            ),
        ),
    )


def _kubeconfig(path: Path, server: str, token: str, ns: str) -> Path:
    path.write_text(
        yaml.safe_dump(
            {
                "apiVersion": "v1",
                "kind": "Config",
                "clusters": [
                    {"name": "t", "cluster": {"server": server, "insecure-skip-tls-verify": True}}
                ],
                "users": [{"name": "sa", "user": {"token": token}}],
                "contexts": [
                    {"name": "sa", "context": {"cluster": "t", "user": "sa", "namespace": ns}}
                ],
                "current-context": "sa",
            }
        )
    )
    return path


def _chart(helm_bin: Path, ns: str) -> list[dict[str, Any]]:
    """The chart rendered with the evaluator on and INFER as its inference Deployment."""
    out = subprocess.run(
        [str(helm_bin), "template", "rls", str(CHART), "--namespace", ns,
         "--set", "services.evaluator.enabled=true", "--set", f"evaluator.inferenceDeployment={INFER}"],
        capture_output=True, text=True, timeout=120, check=True,
    ).stdout  # fmt: skip
    return [d for d in yaml.safe_load_all(out) if d]


@pytest.fixture
async def cluster(kube: Any, helm_bin: Path, tmp_path: Path) -> AsyncIterator[dict[str, Any]]:
    """A namespace with the inference Deployment and a decoy, the chart's evaluator
    ServiceAccount, promoter Role and RoleBinding applied as rendered, a kubeconfig with a
    token of that ServiceAccount, and the evaluator container's RLSTREAM_DEPLOY_* env."""
    admin = AsyncClient(KubeConfig.from_file(kube.kubeconfig))
    ns = f"reg-{uuid.uuid4().hex[:6]}"
    await admin.create(Namespace(metadata=ObjectMeta(name=ns)))
    for name in (INFER, "other"):
        await admin.create(_deployment(name, ns))
    docs = _chart(helm_bin, ns)
    wanted = {("ServiceAccount", SA), ("Role", ROLE), ("RoleBinding", ROLE)}
    objs = [d for d in docs if (d["kind"], d["metadata"]["name"]) in wanted]
    assert len(objs) == 3, [(d["kind"], d["metadata"]["name"]) for d in docs]
    for obj in codecs.load_all_yaml(yaml.safe_dump_all(objs)):
        obj.metadata.namespace = ns
        await admin.create(obj)
    evaluator = next(
        d
        for d in docs
        if d["kind"] == "Deployment" and d["metadata"]["name"].endswith("-evaluator")
    )
    assert evaluator["spec"]["template"]["spec"]["serviceAccountName"] == SA
    env = {
        e["name"]: e["value"]
        for e in evaluator["spec"]["template"]["spec"]["containers"][0]["env"]
        if e["name"].startswith("RLSTREAM_DEPLOY_")
    }
    token = await admin.create(
        ServiceAccount.Token(
            metadata=ObjectMeta(name=SA, namespace=ns),
            spec=TokenRequestSpec(audiences=[kube.server], expirationSeconds=3600),
        ),
        SA,
        namespace=ns,
    )
    assert token.status is not None and token.status.token
    sa_cfg = _kubeconfig(tmp_path / "sa.kubeconfig", kube.server, token.status.token, ns)
    try:
        yield {"admin": admin, "ns": ns, "sa_kubeconfig": sa_cfg, "kube": kube, "env": env}
    finally:
        await admin.delete(Namespace, ns)
        await admin.close()


async def test_promotion_patches_the_inference_deployment_through_the_sa(
    cluster: dict[str, Any], store: Store, tmp_path: Path
) -> None:
    ns, admin = cluster["ns"], cluster["admin"]
    # the target exactly as the chart configures the evaluator (plus the SA's kubeconfig)
    assert cluster["env"] == {
        "RLSTREAM_DEPLOY_TARGET": "kubernetes",
        "RLSTREAM_DEPLOY_DEPLOYMENT": INFER,
        "RLSTREAM_DEPLOY_NAMESPACE": ns,
    }
    settings = DeploySettings(
        deploy_target="kubernetes",
        deploy_deployment=cluster["env"]["RLSTREAM_DEPLOY_DEPLOYMENT"],
        deploy_namespace=cluster["env"]["RLSTREAM_DEPLOY_NAMESPACE"],
        deploy_kubeconfig=cluster["sa_kubeconfig"],
    )
    target = make_target(settings)
    sink = RecordingSink()
    reg = Registry(store, target=target, sink=sink)
    a = await reg.register(fake_adapter(tmp_path, "a"), agent="support")
    b = await reg.register(fake_adapter(tmp_path, "b"), agent="support")
    pa = await reg.promote(a.model_id, override=True)  # no evaluation: an operator's
    pb = await reg.promote(b.model_id, override=True)

    dep = await admin.get(Deployment, INFER, namespace=ns)
    assert dep.metadata.annotations[ANNOTATION_MODEL] == b.model_id
    assert dep.spec.template.metadata.annotations[ANNOTATION_MODEL] == b.model_id  # pods roll
    env = {e.name: e.value for e in dep.spec.template.spec.containers[0].env}
    assert env == {ENV_MODEL_ID: b.model_id, ENV_MODEL_PATH: b.path}
    assert dep.spec.template.spec.containers[0].image == "vllm:latest"  # nothing else touched
    (event_a, event_b) = sink.deployments()
    assert (event_a.event_id, event_b.event_id) == (pa.promotion_id, pb.promotion_id)
    assert event_b.target == "kubernetes" and event_b.target_ref == f"{ns}/{INFER}"

    back = await reg.rollback("support")
    assert back.model_id == a.model_id
    dep = await admin.get(Deployment, INFER, namespace=ns)
    assert dep.metadata.annotations[ANNOTATION_MODEL] == a.model_id
    other = await admin.get(Deployment, "other", namespace=ns)
    assert ANNOTATION_MODEL not in (other.metadata.annotations or {})


async def test_the_sa_may_do_nothing_else_and_a_token_without_the_right_gets_403(
    cluster: dict[str, Any], store: Store, tmp_path: Path
) -> None:
    ns, kube = cluster["ns"], cluster["kube"]
    # the same SA, pointed at another Deployment: refused, and the promotion stays pending
    decoy = Registry(
        store, target=KubernetesTarget("other", namespace=ns, kubeconfig=cluster["sa_kubeconfig"])
    )
    m = await decoy.register(fake_adapter(tmp_path, "m"), agent="support")
    with pytest.raises(DeployError, match="403"):
        await decoy.promote(m.model_id, override=True)
    assert [p.model_id for p in await store.unannounced_promotions()] == [m.model_id]
    # an authenticated user with no grants: 403 on the inference Deployment itself
    limited = KubernetesTarget(
        INFER, namespace=ns, container="server", kubeconfig=kube.limited_kubeconfig
    )
    with pytest.raises(DeployError, match="403"):
        await limited.deploy(agent="support", model_id="x", model_path=None, promotion_id="p")
    # and the SA cannot list pods, read the decoy or create Deployments
    sa = AsyncClient(KubeConfig.from_file(cluster["sa_kubeconfig"]))
    try:
        for call in (
            lambda: sa.get(Deployment, "other", namespace=ns),
            lambda: sa.create(_deployment("new", ns)),
        ):
            with pytest.raises(ApiError) as err:
                await call()
            assert err.value.status.code == 403
        with pytest.raises(ApiError) as err:
            _ = [p async for p in sa.list(Pod, namespace=ns)]
        assert err.value.status.code == 403
        assert (await sa.get(Deployment, INFER, namespace=ns)).metadata.name == INFER
    finally:
        await sa.close()
