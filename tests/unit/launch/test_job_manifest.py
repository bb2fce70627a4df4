"""The Job manifest (a pure function), the run plan and the Job-status reading."""

from __future__ import annotations

import hashlib
import json
from pathlib import Path

import pytest

from rlstream.curation import curate, write_dataset
from rlstream.grading import GradeFailure, RewardSpec, grade_many
from rlstream.launch import LaunchRequest, LaunchSettings, RunSpec, plan_run, run_id_for
from rlstream.launch.kubernetes import job_manifest, job_name, job_update
from rlstream.training import TrainConfig
from rlstream.transcript import Message, Transcript

pytestmark = pytest.mark.unit

SHA = hashlib.sha256(b"dataset").hexdigest()


def _request(**kw: object) -> LaunchRequest:
    base = {
        "dataset_id": SHA,
        "agent": "support-bot",
        "reward_spec": "outcome",
        "path": f"/var/lib/rlstream/datasets/support-bot/{SHA}",
        "sha256": SHA,
        "method": "dpo",
    }
    return LaunchRequest(**{**base, **kw})  # type: ignore[arg-type]


def _settings(**kw: object) -> LaunchSettings:
    base = {
        "data_dir": Path("/var/lib/rlstream"),
        "k8s_image": "registry.example/rlstream-gpu:1.2.3",
        "k8s_image_pull_policy": "Always",
        "k8s_service_account": "rlstream-trainer",
        "k8s_gpus": 2,
        "k8s_node_selector": {"nvidia.com/gpu.product": "H100"},
        "k8s_artifact_pvc": "rlstream-artifacts",
        "k8s_env_configmap": "rls-config",
        "k8s_env_secret": "rls-secret",
    }
    return LaunchSettings(**{**base, **kw})  # type: ignore[arg-type]


def _manifest(**kw: object) -> dict:
    s = _settings(**kw)
    spec = plan_run(
        _request(), runs_dir=s.runs_path(), backend="builtin", config=TrainConfig(max_steps=50)
    )
    return job_manifest(spec, s, "ml")


def test_name_is_deterministic_dns_safe_and_short() -> None:
    a, b = job_name(SHA), job_name(SHA)
    assert a == b == "rlstream-train-" + SHA[:40]
    assert len(a) <= 63 and a == a.lower()
    assert job_name(SHA, "x" * 40 + "-") == "x" * 40 + "-" + SHA[:22]
    assert job_name(hashlib.sha256(b"other").hexdigest()) != a
    m = _manifest()
    assert m["metadata"]["name"] == a
    assert run_id_for(SHA) == f"run-{SHA[:24]}"


def test_job_carries_every_field() -> None:
    m = _manifest()
    spec = m["spec"]
    pod = spec["template"]["spec"]
    [c] = pod["containers"]
    assert (m["apiVersion"], m["kind"], m["metadata"]["namespace"]) == ("batch/v1", "Job", "ml")
    assert pod["restartPolicy"] == "Never"
    assert spec["backoffLimit"] == 2 and spec["activeDeadlineSeconds"] == 6 * 3600
    assert spec["ttlSecondsAfterFinished"] == 7 * 24 * 3600
    fail, ignore = spec["podFailurePolicy"]["rules"]
    assert fail == {
        "action": "FailJob",
        "onExitCodes": {"containerName": "trainer", "operator": "In", "values": [2]},
    }
    assert ignore == {
        "action": "Ignore",
        "onPodConditions": [{"type": "DisruptionTarget", "status": "True"}],
    }
    assert c["resources"]["limits"]["nvidia.com/gpu"] == "2"
    assert pod["nodeSelector"] == {"nvidia.com/gpu.product": "H100"}
    assert pod["tolerations"][0]["key"] == "nvidia.com/gpu"
    shm = next(v for v in pod["volumes"] if v["name"] == "dshm")
    assert shm["emptyDir"]["medium"] == "Memory"
    assert {"name": "dshm", "mountPath": "/dev/shm"} in c["volumeMounts"]
    pvc = next(v for v in pod["volumes"] if v["name"] == "artifacts")
    assert pvc["persistentVolumeClaim"]["claimName"] == "rlstream-artifacts"
    assert {"name": "artifacts", "mountPath": "/var/lib/rlstream"} in c["volumeMounts"]
    assert pod["securityContext"]["runAsNonRoot"] is True
    assert c["securityContext"]["allowPrivilegeEscalation"] is False
    assert (c["image"], c["imagePullPolicy"]) == ("registry.example/rlstream-gpu:1.2.3", "Always")
    assert pod["serviceAccountName"] == "rlstream-trainer"
    assert {"name": "HF_HUB_OFFLINE", "value": "1"} in c["env"]
    # the image's own converted base model is used (no per-pod conversion onto the volume)
    assert not any(e["name"] == "RLSTREAM_MODELS_DIR" for e in c["env"])
    # lineage: run.json records the image the pod ran
    assert {"name": "RLSTREAM_IMAGE", "value": "registry.example/rlstream-gpu:1.2.3"} in c["env"]
    assert not any(e["name"] == "RLSTREAM_IMAGE_DIGEST" for e in c["env"])
    assert c["envFrom"] == [
        {"configMapRef": {"name": "rls-config"}},
        {"secretRef": {"name": "rls-secret"}},
    ]
    assert c["command"] == ["python", "-m", "rlstream.services.trainer"]
    args = c["args"]
    assert args[args.index("--dataset") + 1].endswith(SHA)
    assert TrainConfig.model_validate_json(args[args.index("--config") + 1]).max_steps == 50
    labels = m["metadata"]["labels"]
    assert labels["rlstream.dev/run-id"] == f"run-{SHA[:24]}"
    assert labels["rlstream.dev/dataset-id"] == SHA[:63]
    assert all(len(v) <= 63 for v in labels.values())
    assert spec["template"]["metadata"]["labels"] == labels
    ann = m["metadata"]["annotations"]
    assert ann["rlstream.dev/dataset-sha256"] == SHA
    assert len(ann["rlstream.dev/argv-sha256"]) == 64
    json.dumps(m)  # plain data: printable as YAML by `rlstream train --dry-run`


def test_zero_gpus_means_no_gpu_limit() -> None:
    c = _manifest(k8s_gpus=0)["spec"]["template"]["spec"]["containers"][0]
    assert "nvidia.com/gpu" not in c["resources"]["limits"]


def test_argv_hash_changes_with_the_arguments() -> None:
    s = _settings()
    a = plan_run(_request(), runs_dir=s.runs_path(), config=TrainConfig(max_steps=50))
    b = plan_run(_request(), runs_dir=s.runs_path(), config=TrainConfig(max_steps=51))
    assert a.run_id == b.run_id and a.argv_hash() != b.argv_hash()
    assert a.method == "dpo"  # auto takes the request's recommendation
    assert plan_run(_request(method="none"), runs_dir=s.runs_path()).method == "auto"


def test_a_spec_of_an_earlier_release_still_parses() -> None:
    """Job annotations written before the config moved into one TrainConfig."""
    old = plan_run(_request(), runs_dir=Path("/r")).model_dump(mode="json")
    del old["config"]
    old |= {"method": "grpo", "max_steps": 9, "config": {"batch_size": 2}}
    spec = RunSpec.model_validate_json(json.dumps(old))
    assert (spec.method, spec.config.max_steps, spec.config.batch_size) == ("grpo", 9, 2)


def _job(conditions: list[dict], **status: object) -> dict:
    s = _settings()
    m = job_manifest(plan_run(_request(), runs_dir=s.runs_path()), s, "ml")
    m["status"] = {"conditions": conditions, **status}
    return m


def test_only_complete_or_failed_true_is_terminal() -> None:
    assert job_update(_job([])) is None
    pending = _job([{"type": "SuccessCriteriaMet", "status": "True"}])
    assert job_update(pending) is None  # 1.31+: comes before Complete
    assert job_update(_job([{"type": "Complete", "status": "False"}])) is None
    started = job_update(_job([], active=1))
    assert started is not None and started.state == "started"
    done = job_update(_job([{"type": "Complete", "status": "True"}]))
    assert done is not None and done.state == "succeeded" and done.spec is not None
    failed = job_update(
        _job(
            [
                {"type": "FailureTarget", "status": "True", "reason": "PodFailurePolicy"},
                {
                    "type": "Failed",
                    "status": "True",
                    "reason": "DeadlineExceeded",
                    "message": "Job was active longer than specified deadline",
                },
            ]
        )
    )
    assert failed is not None and failed.state == "failed"
    assert failed.reason == "DeadlineExceeded: Job was active longer than specified deadline"
    gone = job_update(_job([]), deleted=True)
    assert gone is not None and gone.state == "failed" and "JobDeleted" in (gone.reason or "")
    assert job_update({"metadata": {"annotations": {}}}) is None  # not ours


def test_a_job_whose_spec_does_not_parse_is_logged_counted_and_skipped(
    caplog: pytest.LogCaptureFixture,
) -> None:
    """A Job annotated by another release (here ``run_id`` renamed) is not ours to read:
    raising made the watcher re-list forever and never report the Jobs after it."""
    from prometheus_client import REGISTRY

    def count() -> float:
        return REGISTRY.get_sample_value("rlstream_launch_jobs_unparseable_total") or 0.0

    job = _job([{"type": "Complete", "status": "True"}])
    ann = job["metadata"]["annotations"]
    old = json.loads(ann["rlstream.dev/run-spec"])
    old["run"] = old.pop("run_id")
    ann["rlstream.dev/run-spec"] = json.dumps(old)
    before = count()
    caplog.set_level("WARNING", logger="rlstream.launch.kubernetes")
    assert job_update(job) is None
    assert job_update(job, deleted=True) is None
    ann["rlstream.dev/run-spec"] = "{not json"
    assert job_update(job) is None
    assert count() == before + 3
    lines = [r.getMessage() for r in caplog.records]
    assert len(lines) == 3 and all("does not parse" in line for line in lines)
    assert f"ml/{job['metadata']['name']}" in lines[0] and "run_id" in lines[0]
    assert not any("support-bot" in line or SHA in line for line in lines)  # no values


def _maths_dataset(out: Path) -> Path:
    """A real curated dataset: 4 maths tasks x 4 rollouts, half right, graded by gsm8k."""
    transcripts = [
        Transcript(
            conversation_id=f"t{t}-r{i}",
            agent="maths-bot",
            label=f"#### {t * 7}",
            task_key=f"t{t}",
            messages=(
                Message(role="user", content=f"What is {t} times 7?"),
                Message(role="assistant", content=f"take {i}: {t * 7 + (i % 2)}"),
            ),
        )
        for t in range(2, 6)
        for i in range(4)
    ]
    graded = grade_many(transcripts, RewardSpec.parse("gsm8k"))
    write_dataset(curate([r for r in graded if not isinstance(r, GradeFailure)]), out)
    return out


def test_manifest_for_a_dataset_folder(tmp_path: Path) -> None:
    from rlstream.launch.kubernetes import job_manifest_for_dataset

    ds = _maths_dataset(tmp_path / "ds")
    manifest = json.loads((ds / "manifest.json").read_text())
    sha = manifest["dataset_id"]
    s = _settings(train_max_steps=7, train_config={"batch_size": 2}, k8s_namespace="ml")
    m = job_manifest_for_dataset(ds, s, agent="maths-bot", backend="openrlhf")
    args = m["spec"]["template"]["spec"]["containers"][0]["args"]
    assert m["metadata"]["name"] == job_name(sha) and m["metadata"]["namespace"] == "ml"
    for flag, value in (("--backend", "openrlhf"), ("--agent", "maths-bot"),
                        ("--reward-spec", manifest["reward_specs"][0])):  # fmt: skip
        assert args[args.index(flag) + 1] == value
    config = TrainConfig.model_validate_json(args[args.index("--config") + 1])
    assert (config.method, config.max_steps, config.batch_size) == (manifest["method"], 7, 2)
    from rlstream.launch import LaunchError, LaunchRequest

    with pytest.raises(LaunchError, match="not a curated dataset"):
        LaunchRequest.from_dataset(tmp_path / "missing")


def test_train_config_travels_whole() -> None:
    s = _settings(train_config={"batch_size": 2, "learning_rate": 1e-4})
    spec = plan_run(_request(), runs_dir=s.runs_path(), config=s.train_config_model())
    args = job_manifest(spec, s, "ml")["spec"]["template"]["spec"]["containers"][0]["args"]
    sent = TrainConfig.model_validate_json(args[args.index("--config") + 1])
    assert sent == TrainConfig(method="dpo", batch_size=2, learning_rate=1e-4)
    assert "--method" not in args and "--max-steps" not in args  # one channel: --config


def test_job_env_carries_the_image_digest_of_a_pinned_reference() -> None:
    digest = "sha256:" + "ab" * 32
    image = f"registry.example/rlstream-gpu@{digest}"
    env = _manifest(k8s_image=image)["spec"]["template"]["spec"]["containers"][0]["env"]
    assert {"name": "RLSTREAM_IMAGE", "value": image} in env
    assert {"name": "RLSTREAM_IMAGE_DIGEST", "value": digest} in env


def test_a_release_labels_the_job_and_its_pods_and_narrows_the_watch() -> None:
    """The chart's NetworkPolicy selects app.kubernetes.io/instance: training pods without
    it were unrestricted (issue 19)."""
    from rlstream.launch.k8s_manifest import INSTANCE_LABEL, SELECTOR, selector

    s = LaunchSettings(k8s_release="rls", k8s_namespace="ml")
    spec = plan_run(_request(), runs_dir=s.runs_path())
    job = job_manifest(spec, s)
    pod_labels = job["spec"]["template"]["metadata"]["labels"]
    assert job["metadata"]["labels"][INSTANCE_LABEL] == pod_labels[INSTANCE_LABEL] == "rls"
    assert selector(s) == {**SELECTOR, INSTANCE_LABEL: "rls"}
    plain = LaunchSettings(k8s_namespace="ml")
    assert INSTANCE_LABEL not in job_manifest(spec, plain)["metadata"]["labels"]
    assert selector(plain) == SELECTOR
