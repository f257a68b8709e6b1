"""An MCP client for the proxy's tests, run as a process of its own so that a test can kill
it mid-call: `python mcp_caller.py TARGET MODE TOOL ARGS_JSON [PROXY_COMMAND...]`, where
TARGET is the proxy's URL (streamable HTTP), or `stdio` to start PROXY_COMMAND as its stdio
subprocess (its stderr to the file `PROXY_ERR` names), and MODE `legacy` (the 2025-11-25
revision, with a session) or `2026-07-28` (stateless). It prints `calling` once its call is
on its way, then the text of the result, and retries `input_required` answers for as long
as it lives."""

from __future__ import annotations

import asyncio
import json
import os
import sys
from typing import Any

import mcp
from mcp.client.stdio import StdioServerParameters
from mcp.client.stdio import stdio_client


async def main(target: str, mode: str, tool: str, args: dict[str, Any], proxy: list[str]) -> None:
    server: Any = target
    if target == "stdio":
        params = StdioServerParameters(command=proxy[0], args=proxy[1:], env=dict(os.environ))
        server = stdio_client(params, errlog=sys.stderr)
    async with mcp.Client(server, mode=mode, input_required_max_rounds=100_000) as client:
        print("calling", flush=True)
        result = await client.call_tool(tool, args)
        print(" ".join(getattr(part, "text", "") for part in result.content), flush=True)


if __name__ == "__main__":
    target, mode, tool, args, *proxy = sys.argv[1:]
    if "PROXY_ERR" in os.environ:  # the stdio proxy's stderr (this process's) to that file
        sys.stderr = open(os.environ["PROXY_ERR"], "w")  # noqa: SIM115 - for the process's life
    asyncio.run(main(target, mode, tool, json.loads(args), proxy))
