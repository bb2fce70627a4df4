"""The kubernetes launcher on the harness kube-apiserver: the Job passes server-side
validation and keeps every field; a second launch adopts the first Job; the chart's
launcher ServiceAccount can create and watch Jobs in its namespace and nothing else."""

from __future__ import annotations

import asyncio
import contextlib
import hashlib
import json
from pathlib import Path
from typing import Any

import pytest
import yaml
from kubehelp import admin, apply_chart_launcher_rbac, finish, namespace, sa_kubeconfig, start
from lightkube import ApiError, AsyncClient, KubeConfig
from lightkube.resources.batch_v1 import Job
from lightkube.resources.core_v1 import Secret

from rlstream.launch import LaunchRequest, LaunchSettings, RunUpdate, plan_run
from rlstream.launch.kubernetes import KubernetesLauncher, job_manifest, job_name
from rlstream.training import TrainConfig

pytestmark = pytest.mark.k8s


async def _until(cond: Any, tries: int = 100) -> None:
    """Wait (0.1 s steps) until ``cond()`` holds, at most ``tries`` times."""
    for _ in range(tries):
        if cond():
            return
        await asyncio.sleep(0.1)


async def _stop(task: asyncio.Task[Any]) -> None:
    task.cancel()
    with contextlib.suppress(asyncio.CancelledError):
        await task


def _request(seed: str) -> LaunchRequest:
    sha = hashlib.sha256(seed.encode()).hexdigest()
    return LaunchRequest(
        dataset_id=sha,
        agent="support-bot",
        reward_spec="customer_support",
        path=f"/var/lib/rlstream/datasets/support-bot/{sha}",
        sha256=sha,
        method="grpo",
    )


def _settings(ns: str, kubeconfig: Path, **kw: Any) -> LaunchSettings:
    base: dict[str, Any] = {
        "data_dir": Path("/var/lib/rlstream"),
        "k8s_namespace": ns,
        "k8s_kubeconfig": kubeconfig,
        "k8s_image": "registry.example/rlstream-gpu:0.1.0",
        "k8s_image_pull_policy": "Always",
        "k8s_service_account": "rlstream-trainer",
        "k8s_gpus": 1,
        "k8s_node_selector": {"nvidia.com/gpu.present": "true"},
        "k8s_artifact_pvc": "rlstream-artifacts",
        "k8s_env_configmap": "rls-rlstream-config",
        "k8s_env_secret": "rls-secrets",
    }
    return LaunchSettings(**{**base, **kw})


async def test_job_passes_server_validation_and_keeps_every_field(kube: Any) -> None:
    client = admin(kube)
    ns = await namespace(client)
    s = _settings(ns, kube.kubeconfig)
    spec = plan_run(_request("fields"), runs_dir=s.runs_path(), config=TrainConfig(max_steps=10))
    manifest = job_manifest(spec, s, ns)
    # dryRun=All: admission and validation run, nothing is stored
    await client.create(Job.from_dict(manifest), dry_run=True)
    assert [j async for j in client.list(Job, namespace=ns)] == []
    # and the validation is real: podFailurePolicy requires restartPolicy Never
    bad = yaml.safe_load(yaml.safe_dump(manifest))
    bad["spec"]["template"]["spec"]["restartPolicy"] = "OnFailure"
    with pytest.raises(ApiError) as err:
        await client.create(Job.from_dict(bad), dry_run=True)
    assert err.value.status.code == 422

    launcher = KubernetesLauncher(s)
    result = await launcher.launch(spec)
    assert result.created and result.handle == f"job/{manifest['metadata']['name']}"
    got = (await client.get(Job, manifest["metadata"]["name"], namespace=ns)).to_dict()
    js, pod = got["spec"], got["spec"]["template"]["spec"]
    [c] = pod["containers"]
    assert pod["restartPolicy"] == "Never"
    assert (js["backoffLimit"], js["activeDeadlineSeconds"], js["ttlSecondsAfterFinished"]) == (
        2, 6 * 3600, 7 * 24 * 3600,
    )  # fmt: skip
    rules = js["podFailurePolicy"]["rules"]
    assert rules[0]["action"] == "FailJob" and rules[0]["onExitCodes"]["values"] == [2]
    assert rules[1] == {
        "action": "Ignore",
        "onPodConditions": [{"type": "DisruptionTarget", "status": "True"}],
    }
    assert c["resources"]["limits"]["nvidia.com/gpu"] == "1"
    assert pod["nodeSelector"] == {"nvidia.com/gpu.present": "true"}
    assert pod["tolerations"] == [
        {"key": "nvidia.com/gpu", "operator": "Exists", "effect": "NoSchedule"}
    ]
    vols = {v["name"]: v for v in pod["volumes"]}
    assert vols["dshm"]["emptyDir"] == {"medium": "Memory", "sizeLimit": "16Gi"}
    assert vols["artifacts"]["persistentVolumeClaim"]["claimName"] == "rlstream-artifacts"
    assert {"name": "dshm", "mountPath": "/dev/shm"} in c["volumeMounts"]
    assert pod["securityContext"]["runAsNonRoot"] is True and pod["securityContext"]["runAsUser"]
    assert c["securityContext"]["allowPrivilegeEscalation"] is False
    assert (c["image"], c["imagePullPolicy"]) == ("registry.example/rlstream-gpu:0.1.0", "Always")
    assert pod["serviceAccountName"] == "rlstream-trainer"
    assert {"name": "HF_HUB_OFFLINE", "value": "1"} in c["env"]
    assert c["command"] == ["python", "-m", "rlstream.services.trainer"]
    labels = got["metadata"]["labels"]
    assert labels["rlstream.dev/run-id"] == spec.run_id
    assert labels["rlstream.dev/dataset-id"] == spec.request.dataset_id[:63]
    ann = got["metadata"]["annotations"]
    assert ann["rlstream.dev/dataset-sha256"] == spec.request.sha256
    assert ann["rlstream.dev/argv-sha256"] == spec.argv_hash()
    await launcher.close()
    await client.close()


async def test_launching_the_same_dataset_twice_adopts_the_first_job(kube: Any) -> None:
    client = admin(kube)
    ns = await namespace(client)
    s = _settings(ns, kube.kubeconfig)
    spec = plan_run(_request("twice"), runs_dir=s.runs_path())
    a, b = KubernetesLauncher(s), KubernetesLauncher(s)  # e.g. before and after a restart
    first = await a.launch(spec)
    second = await b.launch(spec)
    assert first.created and not second.created and first.handle == second.handle
    jobs = [j async for j in client.list(Job, namespace=ns)]
    assert len(jobs) == 1
    for x in (a, b, client):
        await x.close()


async def test_a_job_whose_spec_another_release_wrote_is_adopted_by_its_label(kube: Any) -> None:
    """A 409 on a Job whose run-spec annotation no longer parses (a field renamed between
    releases) is settled by the run-id label: adopted when it is this run's, refused with
    a LaunchError when it is not; never a ValidationError out of launch()."""
    from rlstream.launch import LaunchError
    from rlstream.launch.k8s_manifest import RUN_ID_LABEL, SPEC_ANNOTATION

    client = admin(kube)
    ns = await namespace(client)
    s = _settings(ns, kube.kubeconfig)
    spec = plan_run(_request("renamed"), runs_dir=s.runs_path())
    old = job_manifest(spec, s, ns)
    old["metadata"]["annotations"][SPEC_ANNOTATION] = '{"runId": "from-a-newer-release"}'
    await client.create(Job.from_dict(old))
    launcher = KubernetesLauncher(s)
    adopted = await launcher.launch(spec)
    assert not adopted.created
    await client.patch(  # the same name, another run's label: not ours
        Job, old["metadata"]["name"], {"metadata": {"labels": {RUN_ID_LABEL: "run-other"}}},
        namespace=ns,
    )  # fmt: skip
    with pytest.raises(LaunchError, match="belongs to another run"):
        await launcher.launch(spec)
    await launcher.close()
    await client.close()


@pytest.mark.helm
async def test_chart_launcher_service_account_scope(
    kube: Any, helm_bin: Path, tmp_path: Path
) -> None:
    client = admin(kube)
    ns = await namespace(client)
    other = await namespace(client, "other")
    sa = await apply_chart_launcher_rbac(helm_bin, client, ns)
    cfg = await sa_kubeconfig(kube, client, ns, sa, tmp_path / "sa.kubeconfig")
    s = _settings(ns, cfg)
    launcher = KubernetesLauncher(s)
    spec = plan_run(_request("rbac"), runs_dir=s.runs_path())
    assert (await launcher.launch(spec)).created  # create Jobs: allowed
    seen: list[RunUpdate] = []

    async def on_update(u: RunUpdate) -> None:
        seen.append(u)

    follow = asyncio.create_task(launcher.follow(on_update))  # list + watch: allowed
    await asyncio.sleep(0.5)
    await start(client, job_name(spec.request.sha256), ns)  # seen through the SA's watch
    await _until(lambda: seen)
    await _stop(follow)
    assert [u.state for u in seen] == ["started"] and seen[0].run_id == spec.run_id
    sa_client = AsyncClient(KubeConfig.from_file(cfg))
    with pytest.raises(ApiError) as e1:
        await sa_client.get(Secret, "anything", namespace=ns)
    assert e1.value.status.code == 403
    with pytest.raises(ApiError) as e2:
        _ = [j async for j in sa_client.list(Secret, namespace=ns)]
    assert e2.value.status.code == 403
    with pytest.raises(ApiError) as e3:
        _ = [j async for j in sa_client.list(Job, namespace=other)]
    assert e3.value.status.code == 403
    other_launcher = KubernetesLauncher(_settings(other, cfg))
    with pytest.raises(ApiError) as e4:
        await other_launcher.launch(spec)
    assert e4.value.status.code == 403
    for x in (launcher, other_launcher, sa_client, client):
        await x.close()


class _StaleFirstWatch:
    """The real client, except that the first watch fails with 410 Gone, as a watch whose
    resourceVersion was compacted away does. (The harness API server keeps its whole
    history, so a real 410 cannot be provoked here: this one is injected.)"""

    def __init__(self, client: AsyncClient) -> None:
        self.client = client
        self.watches: list[str | None] = []

    def __getattr__(self, name: str) -> Any:  # create, get, list: the real client's
        return getattr(self.client, name)

    def watch(self, *a: Any, **kw: Any) -> Any:
        self.watches.append(kw.get("resource_version"))
        if len(self.watches) == 1:
            return self._gone()
        return self.client.watch(*a, **kw)

    async def _gone(self) -> Any:
        from lightkube.models.meta_v1 import Status

        raise ApiError(
            status=Status(code=410, reason="Expired", message="too old resource version")
        )
        yield  # an async generator, like the real watch

    async def close(self) -> None:
        await self.client.close()


async def test_follower_relists_after_410_gone(kube: Any, caplog: pytest.LogCaptureFixture) -> None:
    client = admin(kube)
    ns = await namespace(client)
    s = _settings(ns, kube.kubeconfig)
    flaky = _StaleFirstWatch(admin(kube))
    launcher = KubernetesLauncher(s, client=flaky)
    spec = plan_run(_request("gone"), runs_dir=s.runs_path())
    await launcher.launch(spec)
    seen: list[RunUpdate] = []

    async def on_update(u: RunUpdate) -> None:
        seen.append(u)

    caplog.set_level("INFO", logger="rlstream.launch.kubernetes")
    follow = asyncio.create_task(launcher.follow(on_update, retry_s=0.1))
    await _until(lambda: len(flaky.watches) >= 2)
    await finish(client, job_name(spec.request.sha256), ns, ok=True)
    await _until(lambda: seen)
    await _stop(follow)
    assert len(flaky.watches) >= 2 and all(flaky.watches)  # each watch from a fresh list
    assert "410 Gone" in caplog.text
    assert [u.state for u in seen] == ["succeeded"]
    await launcher.close()
    await client.close()


async def test_follower_skips_a_job_whose_spec_does_not_parse(
    kube: Any, caplog: pytest.LogCaptureFixture
) -> None:
    """A Job left by another release (a renamed RunSpec field) sorts first in the list and
    changes during the watch: the follower logs it, skips it and reports the later Job."""
    from prometheus_client import REGISTRY

    def skipped() -> float:
        return REGISTRY.get_sample_value("rlstream_launch_jobs_unparseable_total") or 0.0

    client = admin(kube)
    ns = await namespace(client)
    s = _settings(ns, kube.kubeconfig)
    old = job_manifest(plan_run(_request("old release"), runs_dir=s.runs_path()), s, ns)
    old["metadata"]["name"] = job_name("0" * 64)  # listed before any other Job
    ann = old["metadata"]["annotations"]
    spec_json = json.loads(ann["rlstream.dev/run-spec"])
    spec_json["run"] = spec_json.pop("run_id")
    ann["rlstream.dev/run-spec"] = json.dumps(spec_json)
    await client.create(Job.from_dict(old))
    launcher = KubernetesLauncher(s)
    spec = plan_run(_request("later"), runs_dir=s.runs_path())
    await launcher.launch(spec)
    seen: list[RunUpdate] = []

    async def on_update(u: RunUpdate) -> None:
        seen.append(u)

    before = skipped()
    caplog.set_level("INFO", logger="rlstream.launch.kubernetes")
    follow = asyncio.create_task(launcher.follow(on_update, retry_s=0.1))
    await _until(lambda: skipped() > before)  # listed once: skipped
    await finish(client, old["metadata"]["name"], ns, ok=True)  # a watch event: skipped
    await finish(client, job_name(spec.request.sha256), ns, ok=True)
    await _until(lambda: seen)
    await _stop(follow)
    assert [(u.run_id, u.state) for u in seen] == [(spec.run_id, "succeeded")]
    assert skipped() == before + 2  # once listed, once watched: never re-listed
    assert "does not parse" in caplog.text and "re-listing" not in caplog.text
    await launcher.close()
    await client.close()


async def test_two_releases_in_one_namespace_follow_only_their_own_jobs(kube: Any) -> None:
    """Each release's watcher selects app.kubernetes.io/instance=<release>: a Job of the
    other release is never reported (before, both adopted each other's runs), and a
    same-dataset Job of the other release is refused, not adopted."""
    from rlstream.launch import LaunchError

    client = admin(kube)
    ns = await namespace(client)
    a = KubernetesLauncher(_settings(ns, kube.kubeconfig, k8s_release="rel-a"))
    b = KubernetesLauncher(
        _settings(ns, kube.kubeconfig, k8s_release="rel-b", k8s_job_prefix="rel-b-train-")
    )
    spec_a = plan_run(_request("release a"), runs_dir=a.settings.runs_path())
    spec_b = plan_run(_request("release b"), runs_dir=b.settings.runs_path())
    await a.launch(spec_a)
    await b.launch(spec_b)
    seen: list[RunUpdate] = []

    async def on_update(u: RunUpdate) -> None:
        seen.append(u)

    follow = asyncio.create_task(a.follow(on_update, retry_s=0.1))
    await asyncio.sleep(0.5)
    await finish(client, job_name(spec_b.request.sha256, "rel-b-train-"), ns, ok=True)
    await finish(client, job_name(spec_a.request.sha256), ns, ok=True)
    await _until(lambda: seen)
    await _stop(follow)
    assert {u.run_id for u in seen} == {spec_a.run_id}
    same = KubernetesLauncher(_settings(ns, kube.kubeconfig, k8s_release="rel-b"))
    with pytest.raises(LaunchError, match="belongs to another run"):
        await same.launch(spec_a)  # rel-a's Job name, same prefix: not adopted
    for x in (a, b, same, client):
        await x.close()
