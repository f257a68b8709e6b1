"""`signoff mcp -- <command>`: an MCP server in front of another, asking Signoff before each
call that may change something.

It starts the downstream server (`<command>`, over stdio), lists its tools as its own, and
forwards each call as `signoff.mcp_rules` judges it: `allow` at once, `deny` never, `ask`
once a human approved it through the Signoff API (the same cards, rules, quorum, edits and
timeouts as every other approval), with the approved (possibly edited) arguments.

It never fails open: a declined call, one nobody decided within `--timeout`, and one for
which Signoff could not be reached at all come back as a tool error the model reads
(`is_error`, with the reason and "not executed"), and the tool is not run. Calls that ask go
through the ledger (`signoff.mcp_ledger`), so a call approved once is forwarded once: asking
again for the same call (after a restart of the proxy too) finds the same approval, and the
recorded answer once it was forwarded. A caller that leaves while its call waits is let go
(`signoff.mcp_asking`): the approval is withdrawn, and nothing is forwarded for nobody.

It serves its client over stdio, or over streamable HTTP with `--http` (stateless: each
request stands alone, so a client that drops its stream ends its call's wait), speaking both
the revisions with a session (up to 2025-11-25) and the stateless 2026-07-28 one, which
answers a pending approval with `input_required`. Built on the official `mcp` SDK (2.x):
`mcp.server.Server` for the client's side, `ClientSession` over `stdio_client` for the
downstream one.
"""

from __future__ import annotations

import contextlib
import logging
import os
import sys
from collections.abc import AsyncIterator
from collections.abc import Sequence
from dataclasses import dataclass
from dataclasses import field
from pathlib import Path
from typing import Any

import mcp.types as types
from mcp import ClientSession
from mcp.client.stdio import StdioServerParameters
from mcp.client.stdio import stdio_client
from mcp.server import Server
from mcp.server import ServerRequestContext
from mcp_types.version import MODERN_PROTOCOL_VERSIONS

from signoff.client import AsyncClient
from signoff.errors import SignoffError
from signoff.mcp_asking import Asking
from signoff.mcp_asking import StateRefused
from signoff.mcp_asking import state_of
from signoff.mcp_ledger import Ledger
from signoff.mcp_ledger import call_key
from signoff.mcp_rules import Rule
from signoff.mcp_rules import Verdict
from signoff.mcp_rules import judge
from signoff.models import Approval

log = logging.getLogger("signoff.mcp")
NOT_RUN = "The tool was NOT executed; do not retry this call."


@dataclass
class Proxy:
    command: Sequence[str]
    asking: Asking
    ledger: Ledger
    rules: Sequence[Rule] = ()
    session_name: str = "mcp"
    downstream: ClientSession | None = None
    tools: dict[str, types.Tool] = field(default_factory=dict)

    @property
    def signoff(self) -> AsyncClient:
        return self.asking.signoff

    @contextlib.asynccontextmanager
    async def connected(self) -> AsyncIterator[Proxy]:
        """The downstream server started and its session open, for as long as this lasts."""
        program, *args = self.command
        params = StdioServerParameters(command=program, args=args, env=dict(os.environ))
        async with stdio_client(params) as (read, write), ClientSession(read, write) as session:
            await session.initialize()
            self.downstream = session
            await self.refresh()
            log.info("proxying %d tools of %s", len(self.tools), " ".join(self.command))
            try:
                yield self
            finally:
                self.downstream = None
                await self.signoff.close()
                self.ledger.close()

    async def refresh(self) -> None:
        found = await self._session().list_tools()
        self.tools = {tool.name: tool for tool in found.tools}

    def server(self) -> Server[Any]:
        return Server(
            "signoff-mcp-proxy",
            version="1",
            instructions="Calls that may change something wait for a human's approval.",
            on_list_tools=self.on_list_tools,
            on_call_tool=self.on_call_tool,
        )

    async def on_list_tools(
        self, ctx: ServerRequestContext[Any], params: types.PaginatedRequestParams | None
    ) -> types.ListToolsResult:
        await self.refresh()
        return types.ListToolsResult(tools=list(self.tools.values()))

    async def on_call_tool(
        self, ctx: ServerRequestContext[Any], params: types.CallToolRequestParams
    ) -> types.CallToolResult | types.InputRequiredResult:
        name, args = params.name, dict(params.arguments or {})
        if name not in self.tools:
            await self.refresh()
        tool = self.tools.get(name)
        if tool is None:
            return refusal(f"There is no tool {name!r}. {NOT_RUN}")
        verdict = judge(self.rules, name, args, tool.annotations)
        log.info("call %s: %s (%s)", name, verdict.action, verdict.why)
        if verdict.action == "allow":
            return await self._forward(name, args)
        if verdict.action == "deny":
            return refusal(f"{name} is not allowed: {verdict.reason or verdict.why}. {NOT_RUN}")
        if ctx.protocol_version in MODERN_PROTOCOL_VERSIONS:  # stateless: a round at a time
            return await self._gated(name, args, verdict, params.request_state, stateless=True)
        return await self._gated(name, args, verdict, None, stateless=False)

    async def _gated(
        self,
        name: str,
        args: dict[str, Any],
        verdict: Verdict,
        state: str | None,
        *,
        stateless: bool,
    ) -> types.CallToolResult | types.InputRequiredResult:
        key = call_key(self.session_name, name, args)
        entry = self.ledger.find(key)
        if entry is not None and entry.state == "done" and entry.result is not None:
            return types.CallToolResult.model_validate(entry.result)  # forwarded once already
        if entry is not None:
            return in_doubt(name)
        try:
            if stateless:
                approval = await self.asking.one_round(key, name, args, verdict.policy, state)
            else:
                approval = await self.asking.until_decided(key, name, args, verdict.policy)
        except StateRefused as exc:
            return refusal(f"{name} was not retried as this proxy asked: {exc}. {NOT_RUN}")
        except SignoffError as exc:  # nobody can be asked: the call does not run
            log.error("call %s: could not ask Signoff: %s", name, exc)
            return refusal(
                f"{name} needs a human's approval, which could not be asked for ({exc}). {NOT_RUN}"
            )
        if approval.state == "pending" and stateless and not self.asking.out_of_time(approval):
            return types.InputRequiredResult(request_state=state_of(approval))  # call again
        return await self._answer(key, name, args, approval)

    async def _answer(
        self, key: str, name: str, args: dict[str, Any], approval: Approval
    ) -> types.CallToolResult:
        """What a decided (or timed out) call comes to: forwarded once if approved."""
        if approval.state == "declined":
            who = approval.decided_by or "Signoff"
            return refusal(
                f"{name} was declined by {who}: {approval.reason or 'no reason'}. {NOT_RUN}"
            )
        if approval.state != "approved":
            return refusal(
                f"{name} is waiting for approval {approval.id}, and nobody decided "
                f"within {self.asking.timeout:g} s. {NOT_RUN}"
            )
        if not self.ledger.start(key, name, args, approval.id):
            return in_doubt(name)  # another forward of this call claimed it meanwhile
        result = await self._forward(name, approval.final_args)
        self.ledger.finish(key, result.model_dump(mode="json", by_alias=True, exclude_none=True))
        return result

    async def _forward(self, name: str, args: dict[str, Any]) -> types.CallToolResult:
        # Fresh params for the downstream session: the client's own belong to another session.
        return await self._session().call_tool(name, args)

    def _session(self) -> ClientSession:
        if self.downstream is None:
            raise RuntimeError("the downstream MCP server is not connected")
        return self.downstream


def refusal(text: str) -> types.CallToolResult:
    return types.CallToolResult(content=[types.TextContent(type="text", text=text)], is_error=True)


def in_doubt(name: str) -> types.CallToolResult:
    return refusal(
        f"{name} was approved and its forwarding started before the proxy stopped: it may "
        f"have run. A person must check before it runs again. {NOT_RUN}"
    )


async def serve_stdio(proxy: Proxy) -> None:
    """Serve the client on this process's stdin and stdout until it closes them; a client
    that died mid-answer (a broken pipe) ends the proxy quietly, its calls let go."""
    from mcp.server.stdio import stdio_server

    async with proxy.connected():
        server = proxy.server()
        try:
            async with stdio_server() as (read, write):
                await server.run(read, write, server.create_initialization_options())
        except* (BrokenPipeError, ConnectionResetError):
            log.info("the client closed its end of the pipe; stopping")
            _silence_stdout()


def _silence_stdout() -> None:
    """Point stdout at /dev/null, so the interpreter's last flush does not trip on the
    broken pipe either."""
    devnull = os.open(os.devnull, os.O_WRONLY)
    os.dup2(devnull, sys.stdout.fileno())
    os.close(devnull)


async def serve_http(proxy: Proxy, *, host: str, port: int) -> None:
    """Serve streamable HTTP, stateless: each request brings up its own transport, so a call
    lives as long as its client's request (a client that drops it is let go)."""
    import uvicorn

    async with proxy.connected():
        app = proxy.server().streamable_http_app(host=host, stateless_http=True)
        config = uvicorn.Config(
            app, host=host, port=port, log_level="warning", timeout_graceful_shutdown=5
        )
        await uvicorn.Server(config).serve()


def open_proxy(
    command: Sequence[str],
    *,
    state: Path,
    rules: Sequence[Rule],
    url: str | None,
    token: str | None,
    session_name: str,
    timeout: float,
    requested_by: str | None,
    heartbeat: float = 25.0,
) -> Proxy:
    if not command:
        raise SignoffError("signoff mcp needs the command that starts the MCP server, after --")
    asking = Asking(
        AsyncClient(url, token, long_poll=heartbeat),
        requested_by=requested_by,
        timeout=timeout,
        round_seconds=heartbeat,
    )
    return Proxy(
        command=list(command),
        asking=asking,
        ledger=Ledger(state),
        rules=rules,
        session_name=session_name,
    )
