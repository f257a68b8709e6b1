"""`signoff mcp -- <command>`: the MCP approval proxy (`signoff.mcp_proxy`) from the command
line. It reaches Signoff over its HTTP API (`--url`, `--token` or `SIGNOFF_URL`,
`SIGNOFF_API_TOKEN`) and keeps its ledger of forwarded calls in `--state`. Needs the `mcp`
extra (`pip install 'signoff[mcp]'`)."""

import os
import sys
from pathlib import Path
from typing import Annotated

import typer

from bot.cli.base import Failure


def mcp(
    command: Annotated[
        list[str], typer.Argument(help="The command that starts the MCP server (after --).")
    ],
    http: Annotated[bool, typer.Option("--http", help="Serve streamable HTTP, not stdio.")] = False,
    host: Annotated[str, typer.Option(help="Where --http listens.")] = "127.0.0.1",
    port: Annotated[int, typer.Option(min=0, max=65535, help="Where --http listens.")] = 8765,
    rules: Annotated[
        Path | None, typer.Option(metavar="PATH", help="TOML rules: allow, ask or deny.")
    ] = None,
    state: Annotated[
        Path, typer.Option(metavar="PATH", help="The ledger of forwarded calls (SQLite).")
    ] = Path(".signoff-mcp.db"),
    session: Annotated[
        str | None, typer.Option(help="Names this proxy's calls (default: the command).")
    ] = None,
    timeout: Annotated[
        float, typer.Option(min=0.1, help="Seconds a call waits for a decision.")
    ] = 3600.0,
    requested_by: Annotated[str | None, typer.Option(help="Who the approvals say asked.")] = None,
    heartbeat: Annotated[
        float,
        typer.Option(
            min=1.0,
            max=60.0,
            help="Seconds each wait on Signoff lasts: how often it hears someone still waits, "
            "and a 2026-07-28 client's round before it retries.",
        ),
    ] = 25.0,
    url: Annotated[str | None, typer.Option(envvar="SIGNOFF_URL", help="Signoff's API.")] = None,
    token: Annotated[
        str | None, typer.Option(envvar="SIGNOFF_API_TOKEN", help="A token with approvals:request.")
    ] = None,
) -> None:
    """Proxy an MCP server, asking a human in Signoff before each call that may change something."""
    import asyncio

    try:
        from signoff.errors import SignoffError
        from signoff.mcp_proxy import open_proxy
        from signoff.mcp_proxy import serve_http
        from signoff.mcp_proxy import serve_stdio
        from signoff.mcp_rules import load_rules
    except ImportError as exc:
        needed = f"signoff mcp needs the mcp extra: pip install 'signoff[mcp]' ({exc})"
        raise Failure(needed) from None
    try:
        proxy = open_proxy(
            command,
            state=state,
            rules=load_rules(rules),
            url=url,
            token=token,
            session_name=session or " ".join(command),
            timeout=timeout,
            requested_by=requested_by,
            heartbeat=heartbeat,
        )
    except (SignoffError, ValueError, OSError) as exc:
        raise Failure(str(exc)) from None
    print(f"signoff mcp: pid {os.getpid()}", file=sys.stderr, flush=True)
    serving = serve_http(proxy, host=host, port=port) if http else serve_stdio(proxy)
    asyncio.run(serving)
