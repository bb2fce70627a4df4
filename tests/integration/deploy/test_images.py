"""The images ensure-images.sh built really run: the services image starts a service against
the harness Kafka (as the chart runs it: non-root, read-only root, no capabilities) and the
service turns a raw conversation into a transcript."""

from __future__ import annotations

import asyncio
import json
import urllib.request
import uuid
from typing import Any

import pytest

from rlstream.events import topics
from rlstream_testkit.stack import conversation, encode, free_port, produce, wait_for_count

pytestmark = [pytest.mark.docker, pytest.mark.kafka]


def _http(port: int, path: str) -> int:
    try:
        with urllib.request.urlopen(f"http://127.0.0.1:{port}{path}", timeout=2) as r:
            return int(r.status)
    except (OSError, urllib.error.HTTPError):
        return 0


def test_services_image_metadata(docker_engine: Any, images: dict[str, str]) -> None:
    out = docker_engine.docker("image", "inspect", images["RLSTREAM_IMAGE"])
    assert out.returncode == 0, out.stderr
    [meta] = json.loads(out.stdout)
    assert meta["Config"]["User"] == "10001:10001"
    assert "PATH=/opt/rlstream/bin:" in " ".join(meta["Config"]["Env"])
    ver = docker_engine.docker(
        "run", "--rm", "--network", "none", images["RLSTREAM_IMAGE"], "rlstream", "--help"
    )
    assert ver.returncode == 0 and "Usage" in ver.stdout, ver.stdout + ver.stderr


def test_service_image_runs_ingest_against_harness_kafka(
    docker_engine: Any, images: dict[str, str], kafka: Any
) -> None:
    prefix = f"img{uuid.uuid4().hex[:6]}."
    kafka.create_topics(
        [prefix + t for t in (topics.CONVERSATIONS_RAW, topics.TRANSCRIPTS)]
        + [prefix + topics.dlq(topics.CONVERSATIONS_RAW)]
    )
    port = free_port()
    name = f"rls-ingest-{uuid.uuid4().hex[:6]}"
    run = docker_engine.docker(
        "run", "-d", "--name", name, "--network", "host",
        "--read-only", "--tmpfs", "/tmp", "--tmpfs", "/var/lib/rlstream:uid=10001,gid=10001",
        "--user", "10001:10001", "--cap-drop", "ALL", "--security-opt", "no-new-privileges",
        "--memory", "1g", "--pids-limit", "512",
        "-e", f"RLSTREAM_KAFKA_BOOTSTRAP={kafka.bootstrap}",
        "-e", f"RLSTREAM_TOPIC_PREFIX={prefix}",
        # no DSN: the one-pod mode with a private embedded PostgreSQL, which must be asked for
        "-e", "RLSTREAM_EMBEDDED_POSTGRES=true",
        "-e", "RLSTREAM_HEALTH_HOST=127.0.0.1", "-e", f"RLSTREAM_HEALTH_PORT={port}",
        images["RLSTREAM_IMAGE"],
        "faststream", "run", "rlstream.services.ingest.app:app",
    )  # fmt: skip
    assert run.returncode == 0, run.stderr
    try:
        for _ in range(300):
            if _http(port, "/readyz") == 200:
                break
            state = docker_engine.docker("inspect", "-f", "{{.State.Running}}", name).stdout
            assert state.strip() == "true", docker_engine.docker("logs", name).stderr[-3000:]
            asyncio.run(asyncio.sleep(0.3))
        else:
            pytest.fail("ingest in the image never became ready:\n" + _logs(docker_engine, name))
        conv = conversation("img-c1", "t1", resolved=True)
        asyncio.run(produce(kafka.bootstrap, prefix + topics.CONVERSATIONS_RAW, encode([conv])))
        recs = asyncio.run(wait_for_count(kafka.bootstrap, prefix + topics.TRANSCRIPTS, 1, 90))
        assert len(recs) == 1, _logs(docker_engine, name)
        assert json.loads(recs[0].value)["conversation_id"] == "img-c1"
    finally:
        docker_engine.docker("rm", "-f", name)


def _logs(engine: Any, name: str) -> str:
    out = engine.docker("logs", name)
    return (out.stdout + out.stderr)[-4000:]
