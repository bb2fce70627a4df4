"""The training Job for a verl run: the same launcher and manifest as every backend (the
GPU limit, the in-memory /dev/shm Ray and NCCL need, the GPU image that pins verl), with
the run's backend and config passed to the trainer."""

from __future__ import annotations

import hashlib
import json
from pathlib import Path

import pytest

from rlstream.launch import LaunchRequest, LaunchSettings, plan_run
from rlstream.launch.kubernetes import job_manifest
from rlstream.training import TrainConfig

pytestmark = pytest.mark.unit
SHA = hashlib.sha256(b"verl-dataset").hexdigest()


def test_a_verl_run_gets_gpus_shm_and_its_backend() -> None:
    request = LaunchRequest(
        dataset_id=SHA,
        agent="math-tutor",
        reward_spec="gsm8k",
        path=f"/var/lib/rlstream/datasets/math-tutor/{SHA}",
        sha256=SHA,
        method="grpo",
    )
    settings = LaunchSettings(
        data_dir=Path("/var/lib/rlstream"),
        k8s_image="registry.example/rlstream-gpu@sha256:" + "a" * 64,
        k8s_gpus=1,
        k8s_shm_size="16Gi",
    )
    config = TrainConfig(method="gspo", backend_args=("trainer.total_epochs=2",))
    spec = plan_run(request, runs_dir=settings.runs_path(), backend="verl", config=config)
    job = job_manifest(spec, settings, "ml")
    pod = job["spec"]["template"]["spec"]
    container = pod["containers"][0]
    assert container["resources"]["limits"]["nvidia.com/gpu"] == "1"
    assert {"name": "dshm", "mountPath": "/dev/shm"} in container["volumeMounts"]
    shm = next(v for v in pod["volumes"] if v["name"] == "dshm")
    assert shm["emptyDir"] == {"medium": "Memory", "sizeLimit": "16Gi"}
    args = container["args"]
    assert args[args.index("--backend") + 1] == "verl"
    sent = json.loads(args[args.index("--config") + 1])
    assert sent["method"] == "gspo" and sent["backend_args"] == ["trainer.total_epochs=2"]
    assert job["metadata"]["annotations"]["rlstream.dev/backend"] == "verl"
    env = {e["name"]: e.get("value") for e in container["env"]}
    assert env["RLSTREAM_IMAGE_DIGEST"] == "sha256:" + "a" * 64  # the image that pins verl


def test_the_budget_counts_what_verl_runs() -> None:
    """verl trains exactly max_steps (or trainer.total_training_steps) steps of
    min(rows, batch) prompts x n samples (PPO: one sample per prompt)."""
    from rlstream.launch.budget import planned_steps

    grpo = TrainConfig(method="grpo", max_steps=7, batch_size=4, num_generations=8)
    assert planned_steps(grpo, "verl", 100) == (7, 32)
    assert planned_steps(grpo, "verl", 3) == (7, 24)  # the batch is sized down to the rows
    ppo = grpo.model_copy(update={"method": "ppo"})
    assert planned_steps(ppo, "verl", 100) == (7, 4)
    capped = grpo.model_copy(update={"backend_args": ("trainer.total_training_steps=3",)})
    assert planned_steps(capped, "verl", 100) == (3, 32)
