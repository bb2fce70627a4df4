"""The whole loop on the real cluster, installed by the chart with the harness's images:
conversations produced to Kafka -> ingest -> grader -> the curator releases a dataset ->
its Kubernetes launcher creates the training Job -> the Job's pod (CPU trainer image, the
bundled small model, two steps, no GPU limit) runs and succeeds -> the curator's watcher
records the run as succeeded -> the evaluator (in the trainer image) decides."""

from __future__ import annotations

import asyncio
import json
import time
from pathlib import Path
from typing import Any

import pytest
from chart_install import install_chart
from helpers import pg
from kube_api import job_done, pod_logs

from rlstream.events import DatasetReleased, EvaluationEvent, TrainingRunEvent, topics
from rlstream_testkit.stack import conversation, encode, produce, read_topic, wait_for_count

pytestmark = [pytest.mark.cluster, pytest.mark.helm, pytest.mark.slow, pytest.mark.timeout(2400)]
NS = "rls-e2e"
REL = "e2e"
PREFIX = "e2e."


def _events(bootstrap: str, topic: str, model: Any) -> list[Any]:
    return [model.model_validate_json(r.value) for r in asyncio.run(read_topic(bootstrap, topic))]


def test_conversations_to_a_trained_and_evaluated_model(
    cluster: Any, cluster_kafka: Any, cluster_postgres: Any, helm_bin: Path, tmp_path_factory: Any
) -> None:
    t0 = time.monotonic()
    cluster.load_images("TRAINER_IMAGE")
    print(f"[e2e] trainer image in containerd after {time.monotonic() - t0:.0f}s")
    boot = cluster_kafka.bootstrap
    cluster_kafka.create_topics([PREFIX + t for t in topics.ALL_TOPICS])
    repo, _, tag = cluster.images["TRAINER_IMAGE"].rpartition(":")
    rel = install_chart(
        cluster, cluster_kafka, cluster_postgres, helm_bin, tmp_path_factory, NS, REL,
        {
            "config": {
                "topicPrefix": PREFIX,
                "extraEnv": {
                    "RLSTREAM_RELEASE_MIN_ROLLOUTS": "40",
                    "RLSTREAM_RELEASE_MIN_GROUPS": "4",
                    "RLSTREAM_RELEASE_MIN_GRADIENT_SUPPORT": "0.2",
                    "RLSTREAM_RELEASE_CHECK_INTERVAL_S": "0.5",
                    # the evaluator's budget: one greedy sample of a few tokens per prompt
                    "RLSTREAM_EVAL_GREEDY": "true",
                    "RLSTREAM_EVAL_K": "1",
                    "RLSTREAM_EVAL_MAX_PROMPTS": "4",
                    "RLSTREAM_EVAL_MAX_NEW_TOKENS": "16",
                },
            },
            # a few tiny steps: the test proves the Job runs, not that the model learns
            "training": {
                "maxSteps": 2,
                "config": {"max_length": 128, "batch_size": 2},
                "memory": "4Gi",
            },
            "services": {
                "evaluator": {
                    "enabled": True,
                    "image": {"repository": repo, "tag": tag},
                }
            },
        },
    )  # fmt: skip
    api = rel.api
    try:
        convs = [
            conversation(f"e{i}", f"task{i % 8}", resolved=(i // 8) % 3 == 0) for i in range(60)
        ]
        asyncio.run(produce(boot, PREFIX + topics.CONVERSATIONS_RAW, encode(convs)))
        ds = asyncio.run(wait_for_count(boot, PREFIX + topics.DATASETS, 1, timeout=240))
        assert ds, "no dataset released:\n" + pod_logs(api, NS, "app.kubernetes.io/instance=e2e")
        release = DatasetReleased.model_validate_json(ds[0].value)

        sel = "app.kubernetes.io/component=trainer"
        jobs = api.wait(
            lambda: api.ok("GET", f"/apis/batch/v1/namespaces/{NS}/jobs?labelSelector={sel}")[
                "items"
            ],
            120,
            "the curator's training Job",
        )
        [job] = jobs
        name = job["metadata"]["name"]
        assert job["metadata"]["annotations"]["rlstream.dev/dataset-sha256"] == release.sha256
        limits = job["spec"]["template"]["spec"]["containers"][0]["resources"]["limits"]
        assert "nvidia.com/gpu" not in limits  # the chart's training.gpu.enabled=false
        result = api.wait(lambda: job_done(api, NS, name), 1500, f"Job {name}", every=5)
        logs = pod_logs(api, NS, f"job-name={name}")
        assert result == "Complete", logs
        run_id = job["metadata"]["labels"]["rlstream.dev/run-id"]

        def succeeded() -> list[TrainingRunEvent]:
            evs = _events(boot, PREFIX + topics.TRAINING, TrainingRunEvent)
            return [e for e in evs if e.state == "succeeded" and e.run_id == run_id]

        [done] = api.wait(succeeded, 180, "the watcher's succeeded event", every=2)
        assert done.launcher == "kubernetes" and done.dataset_id == release.dataset_id
        rows = asyncio.run(pg(rel.dsn, "SELECT status FROM runs WHERE run_id = $1", run_id))
        assert [r["status"] for r in rows] == ["succeeded"]

        def decided() -> list[EvaluationEvent]:
            evs = _events(boot, PREFIX + topics.EVALUATIONS, EvaluationEvent)
            return [e for e in evs if e.run_id == run_id]

        try:
            [decision] = api.wait(decided, 900, "the evaluator's decision", every=5)
        except AssertionError as e:
            raise AssertionError(
                f"{e}\n" + pod_logs(api, NS, "app.kubernetes.io/component=evaluator")[-6000:]
            ) from None
        assert decision.decision in ("promote", "reject", "insufficient")
        print(f"[e2e] {decision.decision}: {json.dumps(list(decision.reasons))}")
        print(f"[e2e] conversations -> decision in {time.monotonic() - t0:.0f}s")
    finally:
        rel.uninstall()
