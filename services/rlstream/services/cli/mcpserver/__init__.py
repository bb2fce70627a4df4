"""``rlstream mcp``: the improve loop as a Model Context Protocol server (docs/mcp.md)."""
