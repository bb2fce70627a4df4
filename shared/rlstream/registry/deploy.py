"""Deploy targets: what "champion moved" does outside Postgres.

``none`` records only. ``kubernetes`` patches ONE configured inference Deployment with a
strategic-merge patch: annotations ``rlstream.io/model-id`` (+ promotion id, agent) on the
Deployment and on its pod template (so the pods roll), and env ``RLSTREAM_MODEL_ID`` /
``RLSTREAM_MODEL_PATH`` on one container. The ServiceAccount doing it needs only ``get``
and ``patch`` on that Deployment by name (charts/rlstream/templates/model-deployer-rbac.yaml).
The patch is idempotent: re-announcing a promotion writes the same values.

``serve`` and ``vllm`` swap the adapter in a running server instead (registry/hotswap.py).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, Literal, Protocol

from pydantic import Field, SecretStr

from rlstream.errors import ConfigError
from rlstream.registry.errors import DeployError
from rlstream.settings import Settings

ANNOTATION_MODEL = "rlstream.io/model-id"
ANNOTATION_PROMOTION = "rlstream.io/promotion-id"
ANNOTATION_AGENT = "rlstream.io/agent"
ENV_MODEL_ID = "RLSTREAM_MODEL_ID"
ENV_MODEL_PATH = "RLSTREAM_MODEL_PATH"

TargetName = Literal["none", "kubernetes", "serve", "vllm"]


class DeploySettings(Settings):
    """Where a champion goes (env ``RLSTREAM_DEPLOY_*``)."""

    deploy_target: TargetName = "none"
    deploy_namespace: str | None = Field(default=None, description="default: the kubeconfig's")
    deploy_deployment: str | None = Field(default=None, description="the inference Deployment")
    deploy_container: str | None = Field(default=None, description="default: its first container")
    deploy_kubeconfig: Path | None = Field(default=None, description="default: in-cluster/~/.kube")
    deploy_serve_url: str | None = Field(
        default=None, description="target serve: the rlstream serve to hot-swap"
    )
    deploy_vllm_url: str | None = Field(
        default=None, description="target vllm: the vLLM server whose LoRA adapters to swap"
    )
    deploy_vllm_api_key: SecretStr | None = Field(
        default=None, description="target vllm: the server's --api-key, if it has one"
    )
    deploy_timeout_s: float = Field(
        default=300.0, gt=0, description="targets serve/vllm: the wait for one adapter load"
    )
    serve_admin_token: SecretStr | None = Field(
        default=None, description="target serve: rlstream serve's admin token, if it has one"
    )


class DeployTarget(Protocol):
    name: str

    def ref(self) -> str | None:
        """Where it deploys, for the DeploymentEvent (e.g. ``namespace/deployment``)."""
        ...

    async def deploy(
        self, *, agent: str, model_id: str, model_path: str | None, promotion_id: str
    ) -> None: ...


class NoneTarget:
    """Record the promotion, deploy nothing (the embedded default and tests)."""

    name = "none"

    def ref(self) -> str | None:
        return None

    async def deploy(
        self, *, agent: str, model_id: str, model_path: str | None, promotion_id: str
    ) -> None:
        return None


def deployment_patch(
    *, agent: str, model_id: str, model_path: str | None, promotion_id: str, container: str
) -> dict[str, Any]:
    """The strategic-merge patch that points a Deployment at ``model_id``."""
    notes = {
        ANNOTATION_MODEL: model_id,
        ANNOTATION_PROMOTION: promotion_id,
        ANNOTATION_AGENT: agent,
    }
    env = [{"name": ENV_MODEL_ID, "value": model_id}]
    if model_path:
        env.append({"name": ENV_MODEL_PATH, "value": model_path})
    return {
        "metadata": {"annotations": notes},
        "spec": {
            "template": {
                "metadata": {"annotations": notes},
                "spec": {"containers": [{"name": container, "env": env}]},
            }
        },
    }


class KubernetesTarget:
    """Patch one Deployment through lightkube (the ``k8s`` extra)."""

    name = "kubernetes"

    def __init__(
        self,
        deployment: str,
        *,
        namespace: str | None = None,
        container: str | None = None,
        kubeconfig: Path | None = None,
    ) -> None:
        self.deployment = deployment
        self.namespace = namespace
        self.container = container
        self.kubeconfig = kubeconfig

    def ref(self) -> str | None:
        return f"{self.namespace or 'default'}/{self.deployment}"

    def _client(self) -> Any:
        try:
            from lightkube import AsyncClient, KubeConfig
        except ImportError as exc:  # pragma: no cover - depends on the install
            raise ConfigError(
                "deploy target kubernetes needs: pip install 'rlstream[k8s]'"
            ) from exc
        config = KubeConfig.from_file(self.kubeconfig) if self.kubeconfig else None
        return AsyncClient(config=config, namespace=self.namespace)

    async def deploy(
        self, *, agent: str, model_id: str, model_path: str | None, promotion_id: str
    ) -> None:
        from lightkube import ApiError
        from lightkube.resources.apps_v1 import Deployment
        from lightkube.types import PatchType

        client = self._client()
        try:
            container = self.container
            if container is None:
                current = await client.get(Deployment, self.deployment, namespace=self.namespace)
                container = current.spec.template.spec.containers[0].name
            patch = deployment_patch(
                agent=agent,
                model_id=model_id,
                model_path=model_path,
                promotion_id=promotion_id,
                container=container,
            )
            await client.patch(
                Deployment,
                self.deployment,
                patch,
                namespace=self.namespace,
                patch_type=PatchType.STRATEGIC,
            )
        except ApiError as exc:
            code = getattr(exc.status, "code", None)
            raise DeployError(
                f"kubernetes refused the patch of deployment {self.ref()} ({code}): "
                f"{getattr(exc.status, 'message', exc)}"
            ) from exc
        except OSError as exc:
            raise DeployError(f"kubernetes API unreachable: {exc}") from exc
        finally:
            await client.close()


def make_target(settings: DeploySettings, override: TargetName | None = None) -> DeployTarget:
    """The configured target (``override`` from a CLI flag wins)."""
    name = override or settings.deploy_target
    if name == "none":
        return NoneTarget()
    if name in ("serve", "vllm"):
        return _hotswap_target(settings, name)
    if not settings.deploy_deployment:
        raise ConfigError(
            "deploy target kubernetes needs RLSTREAM_DEPLOY_DEPLOYMENT (the inference Deployment)"
        )
    return KubernetesTarget(
        settings.deploy_deployment,
        namespace=settings.deploy_namespace,
        container=settings.deploy_container,
        kubeconfig=settings.deploy_kubeconfig,
    )


def _hotswap_target(settings: DeploySettings, name: str) -> DeployTarget:
    from rlstream.registry.hotswap import ServeTarget, VllmTarget

    url = settings.deploy_serve_url if name == "serve" else settings.deploy_vllm_url
    if not url:
        raise ConfigError(
            f"deploy target {name} needs RLSTREAM_DEPLOY_{name.upper()}_URL (the server to swap)"
        )
    if name == "serve":
        token = settings.serve_admin_token
        return ServeTarget(
            url,
            timeout_s=settings.deploy_timeout_s,
            token=token.get_secret_value() if token else None,
        )
    key = settings.deploy_vllm_api_key
    return VllmTarget(
        url, timeout_s=settings.deploy_timeout_s, api_key=key.get_secret_value() if key else None
    )
