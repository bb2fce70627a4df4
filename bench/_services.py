"""Shared by bench/load.py and bench/chaos.py: real servers (the test harness's own
code) and the services as subprocesses (tests/integration/services/stack.py)."""

from __future__ import annotations

import sys
import tempfile
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
for p in (ROOT / "tests", ROOT / "tests" / "integration" / "services"):
    if str(p) not in sys.path:
        sys.path.insert(0, str(p))

from stack import Stack, conversation, produce, read_topic  # noqa: E402

from harness.servers import Servers  # noqa: E402

__all__ = ["Servers", "Stack", "conversation", "produce", "read_topic", "start_servers"]


def start_servers(
    tiers: tuple[str, ...] = ("kafka", "postgres", "redis"),
) -> tuple[Servers, dict[str, Any], Path]:
    rundir = Path(tempfile.mkdtemp(prefix="rlstream-bench-"))
    servers = Servers(rundir)
    servers.prestart(set(tiers))
    return servers, {t: servers.get(t) for t in tiers}, rundir
