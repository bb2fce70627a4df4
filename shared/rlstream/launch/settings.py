"""Launcher, Kubernetes Job and training-budget settings (env ``RLSTREAM_*``).

One flat, documented variable per knob, like :class:`rlstream.settings.Settings`. The
curator's settings include these, so the chart's ConfigMap configures the launcher.
"""

from __future__ import annotations

from pathlib import Path
from typing import Literal

from pydantic import Field, JsonValue, ValidationError, field_validator

from rlstream.errors import ConfigError
from rlstream.settings import Settings
from rlstream.training.config import TrainConfig


def _gpu_toleration() -> list[dict[str, JsonValue]]:
    return [{"key": "nvidia.com/gpu", "operator": "Exists", "effect": "NoSchedule"}]


class LaunchSettings(Settings):
    launcher: str = Field(
        default="auto",
        description="none | local | kubernetes | any `rlstream.launchers` entry point; "
        "auto = local on embedded settings (no postgres_dsn), none otherwise",
    )
    train_backend: str = Field(default="builtin", description="builtin | openrlhf | verl")
    train_base_model: str | None = Field(
        default=None, description="model dir or hub id; None = the bundled SmolLM2-135M"
    )
    train_max_steps: int | None = Field(default=None, ge=1, description="None: backend default")
    train_config: dict[str, JsonValue] = Field(
        default_factory=dict,
        description='TrainConfig fields as JSON, e.g. {"learning_rate": 1e-4, "batch_size": 4};'
        " checked against TrainConfig at startup",
    )
    train_on_policy: bool = Field(
        default=False,
        description="train on-policy: the methods of TrainConfig.on_policy_methods (the RL ones by "
        "default) use only the rows the agent's champion produced (served and logged with its "
        "model id); a release with none, or an agent with no champion, is not launched",
    )
    runs_dir: Path | None = Field(default=None, description="run outputs; default <data_dir>/runs")

    # ---- Kubernetes Job (the `kubernetes` launcher) -------------------------------------
    k8s_namespace: str | None = Field(
        default=None, description="default: the pod's own namespace, else `default`"
    )
    k8s_kubeconfig: Path | None = Field(
        default=None, description="None: in-cluster config, else ~/.kube/config"
    )
    k8s_job_prefix: str = Field(default="rlstream-train-", pattern=r"^[a-z0-9]([a-z0-9-]*)$")
    k8s_release: str | None = Field(
        default=None,
        max_length=63,
        description="the Helm release: Jobs carry app.kubernetes.io/instance=<release> (the "
        "chart's NetworkPolicy selects it) and the watcher follows only this release's Jobs",
    )
    k8s_image: str = "rlstream-gpu:latest"
    k8s_image_pull_policy: Literal["Always", "IfNotPresent", "Never"] = "IfNotPresent"
    k8s_service_account: str | None = Field(
        default=None, description="the trainer pod's ServiceAccount (None: namespace default)"
    )
    k8s_gpus: int = Field(default=1, ge=0, description="nvidia.com/gpu limit; 0 = no GPU")
    k8s_gpu_resource: str = "nvidia.com/gpu"
    k8s_cpu: str = Field(default="4", description="cpu request and limit")
    k8s_memory: str = Field(default="32Gi", description="memory request and limit")
    k8s_shm_size: str = Field(default="16Gi", description="/dev/shm (in-memory emptyDir)")
    k8s_node_selector: dict[str, str] = Field(default_factory=dict, description="JSON object")
    k8s_tolerations: list[dict[str, JsonValue]] = Field(
        default_factory=_gpu_toleration,
        description="JSON list of tolerations",
    )
    k8s_backoff_limit: int = Field(default=2, ge=0)
    k8s_active_deadline_s: int = Field(default=6 * 3600, ge=60, description="hard time cap")
    k8s_ttl_after_finished_s: int = Field(default=7 * 24 * 3600, ge=0)
    k8s_artifact_pvc: str | None = Field(
        default=None, description="PVC holding datasets and run outputs (mounted at data_dir)"
    )
    k8s_env_configmap: str | None = Field(
        default=None, description="ConfigMap passed to the trainer as envFrom (RLSTREAM_*)"
    )
    k8s_env_secret: str | None = Field(
        default=None, description="Secret passed to the trainer as envFrom (DSNs)"
    )
    k8s_run_as_user: int = 10001
    # What a company cluster adds to every pod (the chart renders these from its values, so
    # the GPU Job gets the services' registry credentials, CA volume and scheduling rules).
    k8s_image_pull_secrets: list[str] = Field(
        default_factory=list, description="JSON list of Secret names (private registries)"
    )
    k8s_priority_class: str | None = Field(default=None, description="priorityClassName")
    k8s_affinity: dict[str, JsonValue] = Field(
        default_factory=dict, description="JSON: the pod's affinity"
    )
    k8s_topology_spread: list[dict[str, JsonValue]] = Field(
        default_factory=list, description="JSON list: topologySpreadConstraints"
    )
    k8s_pod_labels: dict[str, str] = Field(
        default_factory=dict, description="JSON: extra pod labels (never the selector's)"
    )
    k8s_pod_annotations: dict[str, str] = Field(
        default_factory=dict, description="JSON: pod annotations (e.g. a sidecar opt-out)"
    )
    k8s_extra_env: list[dict[str, JsonValue]] = Field(
        default_factory=list,
        description="JSON list of EnvVar objects (e.g. valueFrom.secretKeyRef per key)",
    )
    k8s_extra_env_from: list[dict[str, JsonValue]] = Field(
        default_factory=list, description="JSON list of EnvFromSource objects"
    )
    k8s_extra_volumes: list[dict[str, JsonValue]] = Field(
        default_factory=list, description="JSON list of Volume objects (e.g. a CA Secret)"
    )
    k8s_extra_volume_mounts: list[dict[str, JsonValue]] = Field(
        default_factory=list, description="JSON list of the trainer container's VolumeMounts"
    )
    k8s_watch_timeout_s: int = Field(default=300, ge=5, description="server-side watch timeout")

    # ---- budget (rlstream.launch.budget) ----------------------------------------------
    budget_gpu_hours_per_run: float = Field(default=8.0, gt=0)
    budget_gpu_hours_per_day: float = Field(default=24.0, gt=0)
    budget_gpu_peak_tflops: float = Field(
        default=312.0, gt=0, description="per GPU, dense bf16 (A100: 312, H100 SXM: 989)"
    )
    budget_mfu: float = Field(
        default=0.3, gt=0, le=1, description="model FLOPs utilisation assumed for the estimate"
    )
    budget_model_params: float | None = Field(
        default=None, description="parameter count when it cannot be read from the model"
    )

    @field_validator("train_config")
    @classmethod
    def _a_train_config(cls, value: dict[str, JsonValue]) -> dict[str, JsonValue]:
        """A typo here fails the launcher at startup, not the Job on a GPU (exit 2)."""
        TrainConfig.model_validate(value)
        return value

    def train_config_model(self) -> TrainConfig:
        """The TrainConfig every launch starts from: ``train_config`` + ``train_max_steps``."""
        fields = dict(self.train_config)
        if self.train_max_steps is not None:
            fields["max_steps"] = self.train_max_steps
        try:
            return TrainConfig.model_validate(fields)
        except ValidationError as e:
            raise ConfigError(f"RLSTREAM_TRAIN_CONFIG: {e}") from e

    def resolved_launcher(self) -> str:
        if self.launcher != "auto":
            return self.launcher
        return "local" if self.postgres_dsn is None else "none"

    def runs_path(self) -> Path:
        return self.runs_dir or (self.data_dir / "runs")
