"""The kubernetes deploy target on the harness kube-apiserver: the patch lands on the one
configured Deployment through a ServiceAccount allowed only that; anything else is 403."""

from __future__ import annotations

import uuid
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest
import yaml
from lightkube import ApiError, AsyncClient, KubeConfig
from lightkube.models.apps_v1 import DeploymentSpec
from lightkube.models.authentication_v1 import TokenRequestSpec
from lightkube.models.core_v1 import Container, PodSpec, PodTemplateSpec
from lightkube.models.meta_v1 import LabelSelector, ObjectMeta
from lightkube.models.rbac_v1 import PolicyRule, RoleRef, Subject
from lightkube.resources.apps_v1 import Deployment
from lightkube.resources.core_v1 import Namespace, Pod, ServiceAccount
from lightkube.resources.rbac_authorization_v1 import Role, RoleBinding
from registry_helpers import RecordingSink, fake_adapter

from rlstream.registry import (
    ANNOTATION_MODEL,
    ENV_MODEL_ID,
    ENV_MODEL_PATH,
    DeployError,
    KubernetesTarget,
    Registry,
)
from rlstream.storage import Store

pytestmark = [pytest.mark.k8s, pytest.mark.postgres]

INFER = "infer"


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


@pytest.fixture
async def cluster(kube: Any, tmp_path: Path) -> AsyncIterator[dict[str, Any]]:
    """A namespace with the inference Deployment, a decoy Deployment, and the evaluator's
    ServiceAccount bound to a Role that may get/patch only the inference Deployment (the
    rule charts/rlstream renders for the evaluator), plus a kubeconfig with its token."""
    admin = AsyncClient(KubeConfig.from_file(kube.kubeconfig))
    ns = f"reg-{uuid.uuid4().hex[:6]}"
    await admin.create(Namespace(metadata=ObjectMeta(name=ns)))
    for name in (INFER, "other"):
        await admin.create(_deployment(name, ns))
    await admin.create(ServiceAccount(metadata=ObjectMeta(name="evaluator", namespace=ns)))
    await admin.create(
        Role(
            metadata=ObjectMeta(name="promoter", namespace=ns),
            rules=[
                PolicyRule(
                    apiGroups=["apps"],
                    resources=["deployments"],
                    resourceNames=[INFER],
                    verbs=["get", "patch"],
                )
            ],
        )
    )
    await admin.create(
        RoleBinding(
            metadata=ObjectMeta(name="promoter", namespace=ns),
            roleRef=RoleRef(apiGroup="rbac.authorization.k8s.io", kind="Role", name="promoter"),
            subjects=[Subject(kind="ServiceAccount", name="evaluator", namespace=ns)],
        )
    )
    token = await admin.create(
        ServiceAccount.Token(
            metadata=ObjectMeta(name="evaluator", namespace=ns),
            spec=TokenRequestSpec(audiences=[kube.server], expirationSeconds=3600),
        ),
        "evaluator",
        namespace=ns,
    )
    assert token.status is not None and token.status.token
    sa_cfg = _kubeconfig(tmp_path / "sa.kubeconfig", kube.server, token.status.token, ns)
    try:
        yield {"admin": admin, "ns": ns, "sa_kubeconfig": sa_cfg, "kube": kube}
    finally:
        await admin.delete(Namespace, ns)
        await admin.close()


async def test_promotion_patches_the_inference_deployment_through_the_sa(
    cluster: dict[str, Any], store: Store, tmp_path: Path
) -> None:
    ns, admin = cluster["ns"], cluster["admin"]
    target = KubernetesTarget(INFER, namespace=ns, kubeconfig=cluster["sa_kubeconfig"])
    sink = RecordingSink()
    reg = Registry(store, target=target, sink=sink)
    a = await reg.register(fake_adapter(tmp_path, "a"), agent="support")
    b = await reg.register(fake_adapter(tmp_path, "b"), agent="support")
    pa = await reg.promote(a.model_id)
    pb = await reg.promote(b.model_id)

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
        await decoy.promote(m.model_id)
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
