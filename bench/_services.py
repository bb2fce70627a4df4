"""Shared by the real-stack benches (load, chaos, soak, poison): real servers (the test
harness's own code, rlstream_testkit) and the services as subprocesses (rlstream_testkit.stack)."""

from __future__ import annotations

import tempfile
from pathlib import Path
from typing import Any

from rlstream_testkit.servers import Servers
from rlstream_testkit.stack import Stack, conversation, produce, read_topic

__all__ = [
    "Servers",
    "Stack",
    "conversation",
    "produce",
    "read_topic",
    "release_env",
    "start_servers",
    "start_stack",
]


def start_servers(
    tiers: tuple[str, ...] = ("kafka", "postgres", "redis"),
) -> tuple[Servers, dict[str, Any], Path]:
    rundir = Path(tempfile.mkdtemp(prefix="rlstream-bench-"))
    servers = Servers(rundir)
    servers.prestart(set(tiers))
    return servers, {t: servers.get(t) for t in tiers}, rundir


def start_stack(env: dict[str, str]) -> tuple[Servers, Stack]:
    """Kafka, Postgres and Redis started, and a Stack on them (fresh database) whose
    services get ``env``; the caller creates topics, starts services and stops the servers."""
    servers, srv, rundir = start_servers()
    st = Stack(
        srv["kafka"].bootstrap,
        srv["postgres"].create_database(),
        srv["redis"].url,
        rundir / "stack",
        env=env,
    )
    return servers, st


def release_env(min_rollouts: int, min_groups: int, check_interval_s: int) -> dict[str, str]:
    """The curator's release thresholds a bench lowers so that datasets are released."""
    return {
        "RLSTREAM_RELEASE_MIN_ROLLOUTS": str(min_rollouts),
        "RLSTREAM_RELEASE_MIN_GROUPS": str(min_groups),
        "RLSTREAM_RELEASE_MIN_GRADIENT_SUPPORT": "0.2",
        "RLSTREAM_RELEASE_CHECK_INTERVAL_S": str(check_interval_s),
    }
