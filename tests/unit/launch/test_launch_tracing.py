"""The launch span's context reaches the trainer: in the Job's environment (Kubernetes) and
in the child's (local), where the real trainer process continues it with its train span,
exported over OTLP/HTTP to a receiver in the test."""

from __future__ import annotations

import hashlib
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("opentelemetry.sdk.trace")
pytest.importorskip("opentelemetry.exporter.otlp.proto.http")

from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

from rlstream.launch import LaunchCoordinator, LaunchRequest, LaunchSettings, plan_run
from rlstream.launch.kubernetes import KubernetesLauncher
from rlstream.launch.local import LocalLauncher
from rlstream.observability import tracing
from rlstream_testkit.otlp import OtlpReceiver

pytestmark = pytest.mark.unit

SHA = hashlib.sha256(b"dataset").hexdigest()


@pytest.fixture
def spans() -> Iterator[InMemorySpanExporter]:
    exporter = InMemorySpanExporter()
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    tracing.install(provider, "curator")
    yield exporter
    tracing.shutdown()


def _spec(tmp: Path) -> Any:
    request = LaunchRequest(
        dataset_id=SHA,
        agent="support-bot",
        reward_spec="outcome",
        path=str(tmp / "no-such-dataset"),  # the trainer exits 2 before any connection
        sha256=SHA,
        method="sft",
    )
    return plan_run(request, runs_dir=tmp / "runs")


class _Pool:
    async def execute(self, *args: Any) -> None:
        return None


class _Store:
    pool = _Pool()


def test_job_gets_the_launch_span_as_traceparent(
    spans: InMemorySpanExporter, tmp_path: Path
) -> None:
    launcher = KubernetesLauncher(LaunchSettings(k8s_namespace="ns"), client=object())
    spec = _spec(tmp_path)
    assert "TRACEPARENT" not in str(launcher.manifest(spec))  # no span: nothing added
    with tracing.span("launch") as launch:
        manifest = launcher.manifest(spec)
    [container] = manifest["spec"]["template"]["spec"]["containers"]
    env = {e["name"]: e.get("value") for e in container["env"]}
    ctx = launch.get_span_context()
    assert env["TRACEPARENT"].startswith(f"00-{ctx.trace_id:032x}-{ctx.span_id:016x}-")


async def test_local_trainer_continues_the_launch_trace(
    spans: InMemorySpanExporter, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    published: list[Any] = []

    async def publish(event: Any) -> None:
        published.append(event)

    with OtlpReceiver() as rx:
        # what the child inherits: tracing on, exporting to the receiver; no services needed
        monkeypatch.setenv("RLSTREAM_TRACING", "otlp")
        monkeypatch.setenv("RLSTREAM_OTLP_ENDPOINT", rx.endpoint)
        monkeypatch.setenv("RLSTREAM_DATA_DIR", str(tmp_path))
        launcher = LocalLauncher(LaunchSettings())
        coordinator = LaunchCoordinator(launcher, _Store(), publish, LaunchSettings())
        spec = _spec(tmp_path)
        with tracing.span("release") as release:
            result = await coordinator._launch(spec)
        assert result.created and published[0].state == "launched"
        [launch] = [s for s in spans.get_finished_spans() if s.name == "launch"]
        assert launch.parent.span_id == release.get_span_context().span_id
        assert launch.attributes["rlstream.run_id"] == spec.run_id
        got = rx.wait_for(lambda s: any(x.name == "train" for x in s), timeout=60)
        await launcher.close()
    [train] = [s for s in got if s.name == "train"]
    ctx = launch.context
    assert (
        train.trace_id == f"{ctx.trace_id:032x}" and train.parent_span_id == f"{ctx.span_id:016x}"
    )
    assert train.service == "rlstream-trainer" and train.attributes["rlstream.exit_code"] == 2
    assert train.error  # a trainer that exits non-zero marks its span failed
