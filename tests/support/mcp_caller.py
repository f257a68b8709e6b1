"""An MCP client for the proxy's tests, run as a process of its own so that a test can kill
it mid-call: `python mcp_caller.py TARGET MODE TOOL ARGS_JSON`, where TARGET is the proxy's
URL (streamable HTTP) and MODE `legacy` (the 2025-11-25 revision, with a session) or
`2026-07-28` (stateless). It prints `calling` once its call is on its way, then the text of
the result, and retries `input_required` answers for as long as it lives."""

from __future__ import annotations

import asyncio
import json
import sys

import mcp


async def main(target: str, mode: str, tool: str, args: dict[str, object]) -> None:
    async with mcp.Client(target, mode=mode, input_required_max_rounds=100_000) as client:
        print("calling", flush=True)
        result = await client.call_tool(tool, args)
        print(" ".join(getattr(part, "text", "") for part in result.content), flush=True)


if __name__ == "__main__":
    asyncio.run(main(sys.argv[1], sys.argv[2], sys.argv[3], json.loads(sys.argv[4])))
