"""Shared by bench/load.py and bench/chaos.py: real servers (the test harness's own
code, rlstream_testkit) and the services as subprocesses (rlstream_testkit.stack)."""

from __future__ import annotations

import tempfile
from pathlib import Path
from typing import Any

from rlstream_testkit.servers import Servers
from rlstream_testkit.stack import Stack, conversation, produce, read_topic

__all__ = ["Servers", "Stack", "conversation", "produce", "read_topic", "start_servers"]


def start_servers(
    tiers: tuple[str, ...] = ("kafka", "postgres", "redis"),
) -> tuple[Servers, dict[str, Any], Path]:
    rundir = Path(tempfile.mkdtemp(prefix="rlstream-bench-"))
    servers = Servers(rundir)
    servers.prestart(set(tiers))
    return servers, {t: servers.get(t) for t in tiers}, rundir
