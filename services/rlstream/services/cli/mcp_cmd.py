"""``rlstream mcp``: serve the improve loop to an agent over the Model Context Protocol."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from rlstream.errors import ConfigError
from rlstream.services.cli.common import friendly_errors

EXAMPLES = """

[bold]Examples[/]

rlstream mcp --workspace ~/agent-data          (stdio, for Claude Code and other MCP clients)

rlstream mcp --transport http --port 8765      (streamable HTTP at http://127.0.0.1:8765/mcp)

Tools: ingest, grade, profile, curate, estimate_cost, train, evaluate, lineage, promote, rollback. Every path must lie inside --workspace (no '..', no symlink out); promote, rollback and a Kubernetes train need confirm: true. See docs/mcp.md.
"""


@friendly_errors
def mcp(
    workspace: Annotated[
        Path, typer.Option("--workspace", help="the only folder tools may read or write")
    ] = Path("."),
    transport: Annotated[str, typer.Option(help="stdio | http (streamable HTTP)")] = "stdio",
    host: Annotated[str, typer.Option(help="http: address to listen on")] = "127.0.0.1",
    port: Annotated[int, typer.Option(help="http: port")] = 8000,
) -> None:
    """Serve the improve loop (ingest to promote) as MCP tools, confined to a workspace."""
    if transport not in ("stdio", "http"):
        raise ConfigError(f"--transport must be stdio or http, not {transport!r}")
    try:
        from rlstream.services.cli.mcpserver.server import serve
    except ImportError as exc:
        raise ConfigError(
            f"rlstream mcp needs the mcp extra (pip install 'rlstream[mcp]'): {exc}"
        ) from exc
    serve(workspace, "http" if transport == "http" else "stdio", host=host, port=port)


mcp.__doc__ = (mcp.__doc__ or "") + EXAMPLES
