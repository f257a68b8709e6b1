"""A downstream MCP server for the proxy's tests, written with the official SDK (MCPServer):
each call of a tool that changes something is appended to the file `DOWNSTREAM_LOG` names,
so a test counts how often the world was really touched. Run as a script (stdio)."""

from __future__ import annotations

import json
import os
import time

from mcp.server import MCPServer
from mcp.types import ToolAnnotations

server = MCPServer("downstream")


def _record(tool: str, **args: object) -> None:
    with open(os.environ["DOWNSTREAM_LOG"], "a", encoding="utf-8") as log:
        log.write(json.dumps({"tool": tool, **args}) + "\n")
        log.flush()
        os.fsync(log.fileno())


@server.tool(annotations=ToolAnnotations(read_only_hint=True))
def read_file(path: str) -> str:
    """Read a file (pretend)."""
    return f"contents of {path}"


@server.tool(annotations=ToolAnnotations(destructive_hint=True))
def delete_file(path: str) -> str:
    """Delete a file (pretend)."""
    _record("delete_file", path=path)
    return f"deleted {path}"


@server.tool()
def transfer(to: str, amount: int) -> str:
    """Move money (pretend)."""
    _record("transfer", to=to, amount=amount)
    return f"sent {amount} to {to}"


@server.tool(annotations=ToolAnnotations(destructive_hint=True))
def slow_delete(path: str) -> str:
    """Delete, then take a while to say so (a window to kill the proxy in)."""
    _record("slow_delete", path=path)
    time.sleep(float(os.environ.get("DOWNSTREAM_SLOW", "5")))
    return f"deleted {path} slowly"


if __name__ == "__main__":
    server.run()
