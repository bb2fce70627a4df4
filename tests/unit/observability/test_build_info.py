"""rlstream_build_info: version, git sha (RLSTREAM_GIT_SHA, else unknown), python; set on
import of the metrics module, so every service's /metrics carries it."""

from __future__ import annotations

import platform
from importlib.metadata import version

import pytest
from prometheus_client import REGISTRY

from rlstream.observability.metrics import build_info

pytestmark = pytest.mark.unit


def test_build_info_labels(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("RLSTREAM_GIT_SHA", raising=False)
    assert build_info() == {
        "version": version("rlstream"),
        "git_sha": "unknown",
        "python": platform.python_version(),
    }
    monkeypatch.setenv("RLSTREAM_GIT_SHA", " 0123456789abcdef0123456789abcdef01234567ff\n")
    assert build_info()["git_sha"] == "0123456789abcdef0123456789abcdef01234567"


def test_build_info_is_exported_once_imported() -> None:
    samples = [
        sample
        for metric in REGISTRY.collect()
        if metric.name == "rlstream_build_info"
        for sample in metric.samples
    ]
    assert len(samples) == 1 and samples[0].value == 1.0
    assert samples[0].labels["version"] == version("rlstream")
    assert samples[0].labels["python"] == platform.python_version()


async def test_a_services_metrics_endpoint_carries_it() -> None:
    import asyncio

    from rlstream.observability.health import Health

    health = Health()
    port = await health.start("127.0.0.1", 0)
    try:
        reader, writer = await asyncio.open_connection("127.0.0.1", port)
        writer.write(b"GET /metrics HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n")
        await writer.drain()
        body = (await reader.read()).decode()
        writer.close()
        await writer.wait_closed()
    finally:
        await health.stop()
    assert "rlstream_build_info{" in body and f'version="{version("rlstream")}"' in body
