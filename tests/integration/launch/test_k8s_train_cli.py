"""``rlstream train --launcher kubernetes`` on the harness kube-apiserver and a real
Postgres: every flag reaches the created Job (read back from the API server) and the run
is recorded with its budget before the Job exists (issue 17)."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from typing import Any

import pytest
from kubehelp import admin, namespace
from lightkube.resources.batch_v1 import Job
from typer.testing import CliRunner

from rlstream.launch import run_id_for
from rlstream.services.cli.main import app
from rlstream.storage import Store
from rlstream.training import TrainConfig

pytestmark = [pytest.mark.k8s, pytest.mark.postgres]


async def test_every_train_flag_reaches_the_job(
    kube: Any, store: Store, migrated_dsn: str, demo_dataset: Path, tmp_path: Path
) -> None:
    client = admin(kube)
    ns = await namespace(client, "cli")
    rewards = tmp_path / "rewards.yaml"
    rewards.write_text("rewards: []\n")
    env = {
        "RLSTREAM_K8S_KUBECONFIG": str(kube.kubeconfig),
        "RLSTREAM_K8S_NAMESPACE": ns,
        "RLSTREAM_POSTGRES_DSN": migrated_dsn,
        "RLSTREAM_DATA_DIR": str(tmp_path),
    }
    args = [
        "train", "--dataset", str(demo_dataset), "--launcher", "kubernetes",
        "--method", "sft", "--max-steps", "7", "--batch-size", "3", "--learning-rate", "0.0007",
        "--max-length", "512", "--seed", "11", "--backend-arg=--lr_scheduler_type=cosine",
        "--backend-arg=--max_grad_norm=0.5", "--reward-config", str(rewards),
    ]  # fmt: skip
    result = await asyncio.to_thread(CliRunner().invoke, app, args, env=env)
    assert result.exit_code == 0, result.output
    jobs = [j async for j in client.list(Job, namespace=ns)]
    assert len(jobs) == 1
    container = jobs[0].to_dict()["spec"]["template"]["spec"]["containers"][0]
    argv = container["args"]
    sent = TrainConfig.model_validate_json(argv[argv.index("--config") + 1])
    assert sent == TrainConfig(
        method="sft",
        max_steps=7,
        batch_size=3,
        learning_rate=0.0007,
        max_length=512,
        seed=11,
        backend_args=("--lr_scheduler_type=cosine", "--max_grad_norm=0.5"),
        reward_config=str(rewards),
    )
    sha = json.loads((demo_dataset / "manifest.json").read_text())["dataset_id"]
    run = await store.get_run(run_id_for(sha))
    assert run is not None and run.status == "launched"
    budget = run.spec["budget"]
    assert isinstance(budget, dict) and budget["steps"] == 7 and budget["sequences"] == 21
    assert budget["tokens"] == 21 * 512 and float(budget["gpu_hours"]) > 0  # type: ignore[arg-type]
    assert str(run.spec["handle"]).startswith("job/")
    await client.close()
