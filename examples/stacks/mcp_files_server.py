"""A small MCP server (the official SDK) that pretends to manage files; `mcp_client` runs it
behind `signoff mcp`. Reading is marked read-only (forwarded at once); deleting is not."""

from __future__ import annotations

from mcp.server import MCPServer
from mcp.types import ToolAnnotations

server = MCPServer("files")


@server.tool(annotations=ToolAnnotations(read_only_hint=True))
def read_file(path: str) -> str:
    """Read a file."""
    return f"(contents of {path})"


@server.tool(annotations=ToolAnnotations(destructive_hint=True))
def delete_file(path: str) -> str:
    """Delete a file."""
    return f"deleted {path}"


if __name__ == "__main__":
    server.run()
