"""``launcher=kubernetes``: one batch/v1 Job per dataset, created and followed with lightkube.

``launch`` creates the Job from :func:`job_manifest`; a 409 means this dataset was already
launched (a redelivered release, a restarted curator) and the existing Job is adopted.
``follow`` lists the launcher's Jobs, then watches from the list's resourceVersion,
re-listing on 410 Gone and after any dropped connection, so a restart or an outage
misses nothing: each Job's current state is reported again and the caller's run tracker
ignores what it has already recorded. Only ``Complete``/``Failed`` with status ``"True"``
are terminal (``SuccessCriteriaMet``/``FailureTarget`` come first and are not). A Job whose
spec annotation no longer parses (written by another release) is logged, counted in
``rlstream_launch_jobs_unparseable_total`` and skipped: raising would re-list forever and
never report the Jobs listed after it.
"""

from __future__ import annotations

import asyncio
import logging
from pathlib import Path
from typing import Any

from pydantic import ValidationError

from rlstream.launch.base import (
    LaunchError,
    LaunchRequest,
    LaunchResult,
    OnUpdate,
    RunSpec,
    RunUpdate,
    plan_run,
)
from rlstream.launch.k8s_manifest import (
    INSTANCE_LABEL,
    RUN_ID_LABEL,
    SPEC_ANNOTATION,
    default_namespace,
    job_manifest,
    job_name,
    label_value,
    selector,
)
from rlstream.launch.settings import LaunchSettings
from rlstream.observability import tracing
from rlstream.observability.metrics import UNPARSEABLE_JOBS
from rlstream.training.config import TrainConfig
from rlstream.training.data import resolve_config

log = logging.getLogger("rlstream.launch.kubernetes")

__all__ = [
    "KubernetesLauncher",
    "job_manifest",
    "job_manifest_for_dataset",
    "job_name",
    "job_update",
]


def job_manifest_for_dataset(
    dataset_dir: Path,
    settings: LaunchSettings | None = None,
    *,
    config: TrainConfig | None = None,
    backend: str | None = None,
    base_model: str | None = None,
    agent: str | None = None,
) -> dict[str, Any]:
    """The Job ``rlstream train --launcher kubernetes`` would create (``--dry-run``
    prints it): ``config`` (default: the settings' TrainConfig) with its method resolved
    against the dataset, the settings' image, GPUs ..."""
    s = settings or LaunchSettings()
    request = LaunchRequest.from_dataset(dataset_dir, agent=agent)
    _, cfg = resolve_config(Path(dataset_dir), config or s.train_config_model())
    spec = plan_run(
        request,
        runs_dir=s.runs_path(),
        config=cfg,
        backend=backend or s.train_backend,
        base_model=base_model or s.train_base_model,
    )
    return job_manifest(spec, s)


def _get(obj: Any, *path: str) -> Any:
    for p in path:
        if obj is None:
            return None
        obj = obj.get(p) if isinstance(obj, dict) else getattr(obj, p, None)
    return obj


def job_update(job: Any, deleted: bool = False) -> RunUpdate | None:
    """What a Job's status says about its run (None: nothing to report yet)."""
    annotations = _get(job, "metadata", "annotations") or {}
    raw = annotations.get(SPEC_ANNOTATION)
    if raw is None:
        return None
    try:
        spec = RunSpec.model_validate_json(raw)
    except ValidationError as e:
        _skip_unparseable(job, e)
        return None
    conds = {_get(c, "type"): c for c in (_get(job, "status", "conditions") or []) if c is not None}

    def true(kind: str) -> Any:
        c = conds.get(kind)
        return c if c is not None and _get(c, "status") == "True" else None

    if true("Complete") is not None:
        return RunUpdate(run_id=spec.run_id, state="succeeded", spec=spec)
    failed = true("Failed")
    if failed is not None:
        why = _get(failed, "reason") or "Failed"
        msg = _get(failed, "message")
        reason = f"{why}: {msg}" if msg else str(why)
        return RunUpdate(run_id=spec.run_id, state="failed", reason=reason, spec=spec)
    if deleted:
        return RunUpdate(
            run_id=spec.run_id, state="failed", reason="JobDeleted: before it finished", spec=spec
        )
    if (_get(job, "status", "active") or 0) > 0 or _get(job, "status", "startTime"):
        return RunUpdate(run_id=spec.run_id, state="started", spec=spec)
    return None


def _skip_unparseable(job: Any, e: ValidationError) -> None:
    """One short line naming the Job and the failing field paths, never the annotation's
    values (paths and agent names live there)."""
    UNPARSEABLE_JOBS.inc()
    first = e.errors(include_url=False, include_input=False)[0]
    where = ".".join(str(p) for p in first.get("loc", ())) or "(root)"
    log.warning(
        "job %s/%s: run-spec annotation does not parse (%d errors, first %s: %s); skipped",
        _get(job, "metadata", "namespace"),
        _get(job, "metadata", "name"),
        e.error_count(),
        where[:80],
        first.get("type", "?"),
    )


def _owned_by(job: Any, spec: RunSpec, release: str | None) -> bool:
    """Whether an existing Job is this run's: of this release (when there is one), then by
    its run-id label, which every version writes the same way, else by its spec annotation
    (which another version may have written with other fields: unparseable means unknown,
    never a crash)."""
    labels = _get(job, "metadata", "labels") or {}
    if release and labels.get(INSTANCE_LABEL) != release:
        return False  # another release's Job of the same dataset: give it its own prefix
    label = labels.get(RUN_ID_LABEL)
    if label is not None:
        return bool(label == label_value(spec.run_id))
    raw = (_get(job, "metadata", "annotations") or {}).get(SPEC_ANNOTATION)
    try:
        return raw is not None and RunSpec.model_validate_json(raw).run_id == spec.run_id
    except ValueError:
        return False


class KubernetesLauncher:
    name = "kubernetes"

    def __init__(self, settings: LaunchSettings | None = None, client: Any = None) -> None:
        self.settings = settings or LaunchSettings()
        self._client = client
        self.namespace = self.settings.k8s_namespace

    def _api(self) -> Any:
        if self._client is None:
            try:
                from lightkube import AsyncClient, KubeConfig
            except ImportError as e:  # pragma: no cover - depends on the install
                raise LaunchError("launcher=kubernetes needs `pip install rlstream[k8s]`") from e
            path = self.settings.k8s_kubeconfig
            config = KubeConfig.from_file(path) if path else KubeConfig.from_env()
            self._client = AsyncClient(config, field_manager="rlstream")
        if self.namespace is None:
            self.namespace = self.settings.k8s_namespace or (
                getattr(self._client, "namespace", None) or default_namespace(self.settings)
            )
        return self._client

    def manifest(self, spec: RunSpec) -> dict[str, Any]:
        """The Job; with tracing on its container gets ``TRACEPARENT`` of the launch span
        (the trainer's ``train`` span continues the release's trace)."""
        self._api()
        manifest = job_manifest(spec, self.settings, self.namespace)
        trace_env = tracing.env_for_child()
        if trace_env:
            container = manifest["spec"]["template"]["spec"]["containers"][0]
            container["env"] += [{"name": k, "value": v} for k, v in trace_env.items()]
        return manifest

    async def launch(self, spec: RunSpec) -> LaunchResult:
        from lightkube import ApiError
        from lightkube.resources.batch_v1 import Job

        client = self._api()
        manifest = self.manifest(spec)
        name = manifest["metadata"]["name"]
        try:
            await client.create(Job.from_dict(manifest))
            created = True
        except ApiError as e:
            if e.status.code != 409:
                raise
            existing = await client.get(Job, name, namespace=self.namespace)
            if not _owned_by(existing, spec, self.settings.k8s_release):
                raise LaunchError(f"Job {name} exists but belongs to another run") from e
            created = False
            log.info("job already exists: adopted", extra={"job": name, "run_id": spec.run_id})
        return LaunchResult(
            run_id=spec.run_id, created=created, launcher=self.name, handle=f"job/{name}"
        )

    async def follow(self, on_update: OnUpdate, *, retry_s: float = 2.0) -> None:
        """Report every Job's state, forever: list, then watch from the list's version."""
        from lightkube import ApiError
        from lightkube.resources.batch_v1 import Job

        client = self._api()
        while True:
            try:
                listing = client.list(Job, namespace=self.namespace, labels=selector(self.settings))
                async for job in listing:
                    await self._report(on_update, job)
                version = listing.resourceVersion
                async for op, job in client.watch(
                    Job,
                    namespace=self.namespace,
                    labels=selector(self.settings),
                    resource_version=version,
                    server_timeout=self.settings.k8s_watch_timeout_s,
                ):
                    await self._report(on_update, job, deleted=op == "DELETED")
            except asyncio.CancelledError:
                raise
            except ApiError as e:
                if e.status.code == 410:
                    log.info("watch expired (410 Gone): re-listing")
                    continue
                log.warning("job watch failed: %s; re-listing", e.status.message)
            except Exception as e:  # connection drops, API server restarts
                log.warning("job watch interrupted (%s); re-listing", type(e).__name__)
            await asyncio.sleep(retry_s)

    async def _report(self, on_update: OnUpdate, job: Any, deleted: bool = False) -> None:
        update = job_update(job, deleted=deleted)
        if update is not None:
            await on_update(update)

    async def close(self) -> None:
        if self._client is not None:
            await self._client.close()
            self._client = None
