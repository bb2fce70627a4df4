"""The batch/v1 Job for one training run, as a plain dict (a pure function).

``rlstream train --launcher kubernetes --dry-run`` prints exactly what the launcher
creates. Choices (see docs/training.md and the design notes on Job practice):

* name = prefix + dataset sha256 (<= 63 chars): a redelivered release gets a 409 and the
  launcher adopts the existing Job instead of starting a second one;
* ``restartPolicy: Never`` + ``podFailurePolicy``: exit code 2 (bad config) fails the Job
  at once, a disruption (preemption, node drain) does not count against ``backoffLimit``;
* ``activeDeadlineSeconds`` is the hard time cap; ``ttlSecondsAfterFinished`` garbage
  collects the Job after the watcher has had ample time to read its status;
* ``/dev/shm`` is an in-memory emptyDir (the 64 MiB default breaks NCCL and Ray);
* the cluster's own additions (pull secrets, CA volume, priority class, affinity, extra
  env) come from ``k8s_*`` settings the chart renders, never from the run's request.
"""

from __future__ import annotations

import hashlib
from pathlib import Path
from typing import Any

from rlstream.launch.base import EXIT_BAD_CONFIG, TRAINER_MODULE, LaunchError, RunSpec
from rlstream.launch.settings import LaunchSettings

CONTAINER = "trainer"
MANAGED_BY = "rlstream"
COMPONENT = "trainer"
SELECTOR = {"app.kubernetes.io/managed-by": MANAGED_BY, "app.kubernetes.io/component": COMPONENT}
A = "rlstream.dev/"  # label and annotation prefix
SPEC_ANNOTATION = A + "run-spec"
#: the label naming a Job's run (what adoption after a 409 checks)
RUN_ID_LABEL = A + "run-id"
#: the Helm release a Job belongs to (LaunchSettings.k8s_release)
INSTANCE_LABEL = "app.kubernetes.io/instance"


def selector(settings: LaunchSettings) -> dict[str, str]:
    """The labels of this launcher's Jobs: rlstream's, and the release's when it has one,
    so two releases in one namespace never follow (or adopt) each other's runs."""
    if settings.k8s_release:
        return {**SELECTOR, INSTANCE_LABEL: settings.k8s_release}
    return dict(SELECTOR)


def job_name(sha256: str, prefix: str = "rlstream-train-") -> str:
    """Deterministic, DNS-1123 and at most 63 characters (it becomes a pod label)."""
    digest = "".join(c for c in sha256.lower() if c in "0123456789abcdef")
    if len(digest) < 16:
        digest = hashlib.sha256(sha256.encode()).hexdigest()
    room = 63 - len(prefix)
    if room < 16:
        raise LaunchError(f"k8s_job_prefix {prefix!r} leaves fewer than 16 hash characters")
    return prefix + digest[: min(room, 40)]


def label_value(v: str) -> str:
    safe = "".join(c if c.isalnum() or c in "-_." else "_" for c in v)[:63]
    return safe.strip("-_.") or "none"


def image_env(image: str) -> list[dict[str, str]]:
    """``RLSTREAM_IMAGE`` (and ``RLSTREAM_IMAGE_DIGEST`` for a ``name@sha256:...``
    reference) for the run's lineage in ``run.json``."""
    env = [{"name": "RLSTREAM_IMAGE", "value": image}]
    _, at, digest = image.partition("@")
    if at and digest.startswith("sha256:"):
        env.append({"name": "RLSTREAM_IMAGE_DIGEST", "value": digest})
    return env


IN_CLUSTER_NAMESPACE = Path("/var/run/secrets/kubernetes.io/serviceaccount/namespace")


def default_namespace(settings: LaunchSettings) -> str:
    """``k8s_namespace``, else the pod's own namespace, else ``default``."""
    if settings.k8s_namespace:
        return settings.k8s_namespace
    try:
        return IN_CLUSTER_NAMESPACE.read_text().strip() or "default"
    except OSError:
        return "default"


def job_manifest(
    spec: RunSpec, settings: LaunchSettings, namespace: str | None = None
) -> dict[str, Any]:
    """The Job that runs ``python -m rlstream.services.trainer`` for ``spec``."""
    s = settings
    namespace = namespace or default_namespace(s)
    req = spec.request
    name = job_name(req.sha256, s.k8s_job_prefix)
    labels = {
        **selector(s),
        "app.kubernetes.io/name": "rlstream",
        RUN_ID_LABEL: label_value(spec.run_id),
        A + "dataset-id": label_value(req.dataset_id),
        A + "agent": label_value(req.agent),
    }
    annotations = {
        A + "dataset-id": req.dataset_id,
        A + "dataset-sha256": req.sha256,
        A + "argv-sha256": spec.argv_hash(),
        A + "backend": spec.backend,
        A + "method": spec.method,
        A + "base-model": spec.base_model or "default",
        SPEC_ANNOTATION: spec.model_dump_json(),
    }
    limits: dict[str, str] = {"cpu": s.k8s_cpu, "memory": s.k8s_memory}
    if s.k8s_gpus > 0:
        limits[s.k8s_gpu_resource] = str(s.k8s_gpus)
    mount = str(s.data_dir) if s.data_dir.is_absolute() else "/var/lib/rlstream"
    mounts: list[dict[str, Any]] = [{"name": "dshm", "mountPath": "/dev/shm"}]
    volumes: list[dict[str, Any]] = [
        {"name": "dshm", "emptyDir": {"medium": "Memory", "sizeLimit": s.k8s_shm_size}}
    ]
    if s.k8s_artifact_pvc:
        mounts.append({"name": "artifacts", "mountPath": mount})
        volumes.append(
            {"name": "artifacts", "persistentVolumeClaim": {"claimName": s.k8s_artifact_pvc}}
        )
    mounts += [dict(m) for m in s.k8s_extra_volume_mounts]
    volumes += [dict(v) for v in s.k8s_extra_volumes]
    # No RLSTREAM_MODELS_DIR: the trainer images set it to the base model they converted at
    # build time (read-only, pinned by the image digest), so a pod never converts one.
    env: list[dict[str, Any]] = [
        {"name": "HF_HUB_OFFLINE", "value": "1"},
        {"name": "RLSTREAM_DATA_DIR", "value": mount},
        {"name": "HF_HOME", "value": f"{mount}/hf"},
        {"name": "RLSTREAM_LAUNCHER_NAME", "value": "kubernetes"},
        *image_env(s.k8s_image),
        *(dict(e) for e in s.k8s_extra_env),
    ]
    env_from: list[dict[str, Any]] = []
    if s.k8s_env_configmap:
        env_from.append({"configMapRef": {"name": s.k8s_env_configmap}})
    if s.k8s_env_secret:
        env_from.append({"secretRef": {"name": s.k8s_env_secret}})
    env_from += [dict(e) for e in s.k8s_extra_env_from]
    container: dict[str, Any] = {
        "name": CONTAINER,
        "image": s.k8s_image,
        "imagePullPolicy": s.k8s_image_pull_policy,
        "command": ["python", "-m", TRAINER_MODULE],
        "args": spec.trainer_args(),
        "env": env,
        "resources": {"requests": dict(limits), "limits": limits},
        "volumeMounts": mounts,
        "securityContext": {
            "allowPrivilegeEscalation": False,
            "capabilities": {"drop": ["ALL"]},
            "runAsNonRoot": True,
        },
    }
    if env_from:
        container["envFrom"] = env_from
    pod: dict[str, Any] = {
        "restartPolicy": "Never",
        "automountServiceAccountToken": False,  # the trainer never calls the API server
        "securityContext": {
            "runAsNonRoot": True,
            "runAsUser": s.k8s_run_as_user,
            "runAsGroup": s.k8s_run_as_user,
            "fsGroup": s.k8s_run_as_user,
            "seccompProfile": {"type": "RuntimeDefault"},
        },
        "containers": [container],
        "volumes": volumes,
    }
    if s.k8s_service_account:
        pod["serviceAccountName"] = s.k8s_service_account
    if s.k8s_node_selector:
        pod["nodeSelector"] = dict(s.k8s_node_selector)
    if s.k8s_tolerations:
        pod["tolerations"] = [dict(t) for t in s.k8s_tolerations]
    _cluster_additions(pod, s)
    template_meta: dict[str, Any] = {"labels": {**s.k8s_pod_labels, **labels}}
    if s.k8s_pod_annotations:
        template_meta["annotations"] = dict(s.k8s_pod_annotations)
    return {
        "apiVersion": "batch/v1",
        "kind": "Job",
        "metadata": {
            "name": name,
            "namespace": namespace,
            "labels": labels,
            "annotations": annotations,
        },
        "spec": {
            "backoffLimit": s.k8s_backoff_limit,
            "activeDeadlineSeconds": s.k8s_active_deadline_s,
            "ttlSecondsAfterFinished": s.k8s_ttl_after_finished_s,
            "podFailurePolicy": {
                "rules": [
                    {
                        "action": "FailJob",
                        "onExitCodes": {
                            "containerName": CONTAINER,
                            "operator": "In",
                            "values": [EXIT_BAD_CONFIG],
                        },
                    },
                    {
                        "action": "Ignore",
                        "onPodConditions": [{"type": "DisruptionTarget", "status": "True"}],
                    },
                ]
            },
            "template": {"metadata": template_meta, "spec": pod},
        },
    }


def _cluster_additions(pod: dict[str, Any], s: LaunchSettings) -> None:
    """Pull secrets, priority class, affinity and spread, as the services' pods get them."""
    if s.k8s_image_pull_secrets:
        pod["imagePullSecrets"] = [{"name": n} for n in s.k8s_image_pull_secrets]
    if s.k8s_priority_class:
        pod["priorityClassName"] = s.k8s_priority_class
    if s.k8s_affinity:
        pod["affinity"] = dict(s.k8s_affinity)
    if s.k8s_topology_spread:
        pod["topologySpreadConstraints"] = [dict(t) for t in s.k8s_topology_spread]
