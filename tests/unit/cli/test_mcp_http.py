"""``rlstream mcp --transport http``: the same tools over streamable HTTP, reached with the
SDK's own HTTP client."""

from __future__ import annotations

import os
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from mcp import ClientSession

try:
    from mcp.client.streamable_http import streamable_http_client as http_client
except ImportError:  # mcp < 1.24
    from mcp.client.streamable_http import streamablehttp_client as http_client

from rlstream.sampledata.orders import REWARD, write_order_logs

pytestmark = [pytest.mark.unit, pytest.mark.timeout(120)]

BIN = Path(sys.executable).parent


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@pytest.fixture
def served(tmp_path: Path) -> Iterator[tuple[str, Path]]:
    workspace = tmp_path / "ws"
    write_order_logs(workspace / "orders.jsonl", seed=7, n_tasks=10, rollouts=3)
    port = _free_port()
    env = {k: v for k, v in os.environ.items() if not k.startswith("RLSTREAM_")}
    proc = subprocess.Popen(
        [str(BIN / "rlstream"), "mcp", "--workspace", str(workspace), "--transport", "http",
         "--port", str(port)],
        env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
    )  # fmt: skip
    try:
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:
            try:
                socket.create_connection(("127.0.0.1", port), timeout=0.5).close()
                break
            except OSError:
                assert proc.poll() is None, proc.stderr.read() if proc.stderr else ""
                time.sleep(0.2)
        yield f"http://127.0.0.1:{port}/mcp", workspace
    finally:
        proc.terminate()
        proc.wait(timeout=20)


async def test_tools_over_streamable_http(served: tuple[str, Path]) -> None:
    url, workspace = served
    async with http_client(url) as (read, write, _), ClientSession(read, write) as s:
        await s.initialize()
        names = {t.name for t in (await s.list_tools()).tools}
        assert {"profile", "train", "promote"} <= names
        r = await s.call_tool("ingest", {"inputs": ["orders.jsonl"], "out": "t.jsonl"})
        assert not r.isError and r.structuredContent["ok"] == 30  # type: ignore[index]
        r = await s.call_tool("grade", {"input": "t.jsonl", "out": "g.jsonl", "reward": REWARD})
        assert not r.isError
        r = await s.call_tool("profile", {"input": "g.jsonl"})
        assert not r.isError and r.structuredContent["rollouts"] == 30  # type: ignore[index]
        r = await s.call_tool("profile", {"input": "/etc/hostname"})
        assert r.isError
        assert r.content[0].text == (  # type: ignore[union-attr]
            f"error: input /etc/hostname is outside the workspace {workspace.resolve()}"
        )
