"""The ``rlstream mcp`` server: the improve loop as Model Context Protocol tools.

Built on the official SDK's FastMCP. Every tool's result is a pydantic model (its
``outputSchema``); every error is an MCP tool error (``isError``) whose text is the one line
the CLI prints for the same error.
"""

from __future__ import annotations

import json
import os
import sys
from io import TextIOWrapper
from pathlib import Path
from typing import Any, Literal

import anyio
from mcp.server.fastmcp import FastMCP
from mcp.server.fastmcp.exceptions import ToolError
from mcp.server.stdio import stdio_server

from rlstream.errors import ConfigError
from rlstream.services.cli.common import error_line
from rlstream.services.cli.mcpserver import pipeline_tools, registry_tools, train_tools
from rlstream.services.cli.mcpserver.bridge import OperationCancelled
from rlstream.services.cli.mcpserver.state import State
from rlstream.workspace import Workspace

INSTRUCTIONS = """rlstream turns agents' production conversations into RL training data.
The loop: ingest -> grade -> profile (is there signal?) -> curate -> estimate_cost -> train ->
evaluate -> promote (confirm: true) / rollback (confirm: true); lineage explains a model.
Paths are relative to the workspace root; nothing outside it can be read or written."""


class RlstreamMCP(FastMCP[Any]):
    """FastMCP whose tool errors carry the CLI's one-line message, not a wrapper's."""

    async def call_tool(self, name: str, arguments: dict[str, Any]) -> Any:
        try:
            return await super().call_tool(name, arguments)
        except ToolError as exc:
            cause = exc.__cause__
            if isinstance(cause, OperationCancelled):
                raise ToolError(f"error: {name} cancelled by the client") from cause
            if cause is not None and not isinstance(cause, ToolError):
                raise ToolError(error_line(cause)[1]) from cause
            raise


def build_server(
    workspace: str | Path, *, host: str = "127.0.0.1", port: int = 8000
) -> tuple[RlstreamMCP, State]:
    state = State(workspace=Workspace(workspace))
    server = RlstreamMCP(
        name="rlstream", instructions=INSTRUCTIONS, host=host, port=port, log_level="WARNING"
    )
    pipeline_tools.register(server, state)
    train_tools.register(server, state)
    registry_tools.register(server, state)
    _resources(server, state)
    return server, state


def _resources(server: RlstreamMCP, state: State) -> None:
    @server.resource(
        "rlstream://profile/latest", mime_type="application/json",
        description="the latest profile this server computed (the profile tool)",
    )  # fmt: skip
    def latest_profile() -> str:
        if state.profile is None:
            raise ConfigError("no profile yet: call the profile tool first")
        return json.dumps(state.profile, sort_keys=True)

    @server.resource(
        "rlstream://dataset/latest/manifest", mime_type="application/json",
        description="manifest.json of the latest dataset curated here",
    )  # fmt: skip
    def latest_manifest() -> str:
        if state.dataset is None:
            raise ConfigError("no dataset yet: call the curate tool first")
        return (state.dataset / "manifest.json").read_text()

    @server.resource(
        "rlstream://evaluation/latest/report", mime_type="text/markdown",
        description="report.md of the latest evaluation run here",
    )  # fmt: skip
    def latest_report() -> str:
        if state.evaluation is None:
            raise ConfigError("no evaluation yet: call the evaluate tool first")
        return (state.evaluation / "report.md").read_text()

    @server.resource(
        "rlstream://evaluation/latest/report.json", mime_type="application/json",
        description="report.json of the latest evaluation run here",
    )  # fmt: skip
    def latest_report_json() -> str:
        if state.evaluation is None:
            raise ConfigError("no evaluation yet: call the evaluate tool first")
        return (state.evaluation / "report.json").read_text()


def serve(
    workspace: str | Path,
    transport: Literal["stdio", "http"] = "stdio",
    *,
    host: str = "127.0.0.1",
    port: int = 8000,
) -> None:
    server, _ = build_server(workspace, host=host, port=port)
    if transport == "http":
        server.run("streamable-http")
        return
    anyio.run(_stdio, server)


async def _stdio(server: RlstreamMCP) -> None:
    """stdio with the protocol on a private copy of fd 1, and fd 1 pointed at stderr: a
    library that prints (a trainer's log line) cannot corrupt the message stream."""
    proto = os.fdopen(os.dup(sys.stdout.fileno()), "wb", buffering=0)
    os.dup2(sys.stderr.fileno(), sys.stdout.fileno())
    stdout = anyio.wrap_file(TextIOWrapper(proto, encoding="utf-8", write_through=True))
    stdin = anyio.wrap_file(TextIOWrapper(sys.stdin.buffer, encoding="utf-8", errors="replace"))
    async with stdio_server(stdin, stdout) as (read, write):
        low = server._mcp_server
        await low.run(read, write, low.create_initialization_options())
