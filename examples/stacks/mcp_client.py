"""An MCP client (the official SDK) talking to `mcp_files_server` through `signoff mcp`:
`python -m examples.stacks.mcp_client` (see the package doc). The read goes through at once;
the delete waits for a human in signoff dev."""

from __future__ import annotations

import asyncio
import os
import sys
import tempfile
import uuid
from pathlib import Path

from mcp import ClientSession
from mcp.client.stdio import StdioServerParameters, stdio_client


async def main() -> None:
    ledger = Path(tempfile.mkdtemp()) / "ledger.db"
    session_name = f"example-{uuid.uuid4().hex[:8]}"  # each run asks anew
    proxy = StdioServerParameters(
        command=str(Path(sys.executable).with_name("signoff")),
        args=[
            "mcp",
            "--state",
            str(ledger),
            "--session",
            session_name,
            "--timeout",
            "600",
            "--",
            sys.executable,
            "-m",
            "examples.stacks.mcp_files_server",
        ],
        env=dict(os.environ),
    )
    async with stdio_client(proxy) as (read, write), ClientSession(read, write) as session:
        await session.initialize()
        tools = await session.list_tools()
        print("tools:", ", ".join(tool.name for tool in tools.tools))
        read_result = await session.call_tool("read_file", {"path": "/tmp/report.txt"})
        print("read_file:", read_result.content[0].text)
        print("delete_file: waiting for approval in signoff dev", flush=True)
        deleted = await session.call_tool("delete_file", {"path": "/tmp/report.txt"})
        state = "refused" if deleted.is_error else "ok"
        print(f"delete_file ({state}):", deleted.content[0].text)


if __name__ == "__main__":
    asyncio.run(main())
