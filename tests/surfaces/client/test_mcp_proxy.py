"""`signoff mcp` for real: the proxy as a subprocess (`signoff mcp -- python
mcp_downstream.py`), a downstream server written with the MCP SDK, an SDK client, and the
Signoff API served over TCP. Approve, edit, decline, timeout, deny rules, Signoff
unreachable (never fails open), the proxy SIGKILLed between approval and forwarding and
during forwarding (forwarded once, never twice), over stdio and streamable HTTP."""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import re
import signal
import sys
from collections.abc import AsyncIterator
from collections.abc import Awaitable
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from mcp import ClientSession
from mcp.client.stdio import StdioServerParameters
from mcp.client.stdio import stdio_client
from mcp.client.streamable_http import streamable_http_client
from mcp.types import CallToolResult
from support import SUPPORT
from support.helpers import TOKEN
from support.helpers import free_port
from support.helpers import listening
from support.live_api import LiveApi

from store import Approval

DOWNSTREAM = SUPPORT / "mcp_downstream.py"
SIGNOFF = str(Path(sys.executable).with_name("signoff"))


@dataclass
class Setup:
    live: LiveApi
    tmp: Path

    @property
    def log(self) -> Path:
        return self.tmp / "downstream.log"

    def touched(self) -> list[dict[str, Any]]:
        """What the downstream server really did."""
        if not self.log.exists():
            return []
        return [json.loads(line) for line in self.log.read_text().splitlines()]

    def env(self, url: str | None = None) -> dict[str, str]:
        return dict(os.environ) | {
            "SIGNOFF_URL": url or self.live.url,
            "SIGNOFF_API_TOKEN": TOKEN,
            "DOWNSTREAM_LOG": str(self.log),
            "DOWNSTREAM_SLOW": "5",
        }

    def args(self, *options: str) -> list[str]:
        state = str(self.tmp / "proxy-ledger.db")
        return ["mcp", "--state", state, *options, "--", sys.executable, str(DOWNSTREAM)]

    async def approvals(self) -> list[Approval]:
        return await asyncio.to_thread(self.live.run, lambda: self.live.rt.approvals())

    async def pending(self) -> Approval:
        for _ in range(500):
            found = [a for a in await self.approvals() if a.state == "pending"]
            if found:
                return found[0]
            await asyncio.sleep(0.02)
        raise AssertionError("no approval was asked for")

    async def asking(
        self, proxied: Proxied, tool: str, arguments: dict[str, Any]
    ) -> tuple[asyncio.Task[CallToolResult], Approval]:
        """Call `tool` through the proxy without waiting for its answer: the call, and the
        approval it waits on."""
        calling = asyncio.create_task(proxied.session.call_tool(tool, arguments))
        return calling, await self.pending()

    async def decide(self, approval_id: str, decision: str, **how: Any) -> None:
        work = self.live.rt.decide(approval_id, decision, by="U0BOSS", **how)  # type: ignore[arg-type]
        await asyncio.to_thread(self.live.call, work)


@pytest.fixture
def setup(live: LiveApi, tmp_path: Path) -> Setup:
    return Setup(live, tmp_path)


@dataclass
class Proxied:
    session: ClientSession
    errlog: Path

    def pid(self) -> int:
        found = re.search(r"signoff mcp: pid (\d+)", self.errlog.read_text())
        assert found, self.errlog.read_text()
        return int(found.group(1))


@contextlib.asynccontextmanager
async def over_stdio(setup: Setup, *options: str, url: str | None = None) -> AsyncIterator[Proxied]:
    params = StdioServerParameters(command=SIGNOFF, args=setup.args(*options), env=setup.env(url))
    errlog = setup.tmp / f"proxy-{len(list(setup.tmp.glob('proxy-*.err')))}.err"
    with errlog.open("w") as err:
        async with (
            stdio_client(params, errlog=err) as (read, write),
            ClientSession(read, write) as session,
        ):
            await session.initialize()
            yield Proxied(session, errlog)


def text(result: Any) -> str:
    return " ".join(part.text for part in result.content)


async def kill_while_calling(
    setup: Setup,
    tool: str,
    arguments: dict[str, Any],
    meanwhile: Callable[[asyncio.Task[CallToolResult], Approval], Awaitable[None]] | None = None,
) -> Approval:
    """Call `tool` through a proxy and SIGKILL the proxy while the call is in it (once
    `meanwhile`, if given, is done), letting the call fail as it will; the approval it waited on."""
    killed: list[int] = []
    with contextlib.suppress(Exception):
        async with over_stdio(setup) as proxied:
            calling, pending = await setup.asking(proxied, tool, arguments)
            if meanwhile is not None:
                await meanwhile(calling, pending)
            killed.append(proxied.pid())
            os.kill(killed[-1], signal.SIGKILL)
            with contextlib.suppress(Exception):
                await calling
    assert killed, f"the proxy was not killed while calling {tool}"
    return pending


async def test_the_proxy_lists_the_downstream_tools_with_their_annotations(setup: Setup) -> None:
    async with over_stdio(setup) as proxied:
        tools = {t.name: t for t in (await proxied.session.list_tools()).tools}
    assert sorted(tools) == ["delete_file", "read_file", "slow_delete", "transfer"]
    assert tools["read_file"].annotations.read_only_hint is True
    assert tools["delete_file"].input_schema["required"] == ["path"]


async def test_a_read_only_tool_is_forwarded_without_asking(setup: Setup) -> None:
    async with over_stdio(setup) as proxied:
        result = await proxied.session.call_tool("read_file", {"path": "/a"})
    assert (result.is_error, text(result)) == (False, "contents of /a")
    assert await setup.approvals() == []


async def test_an_approved_call_is_forwarded_once_and_asking_again_replays(setup: Setup) -> None:
    async with over_stdio(setup, "--requested-by", "agent-7") as proxied:
        calling, pending = await setup.asking(proxied, "delete_file", {"path": "/x"})
        assert (pending.tool, pending.args, pending.requested_by) == (
            "delete_file",
            {"path": "/x"},
            "agent-7",
        )
        assert setup.touched() == []  # nothing runs while it waits
        await setup.decide(pending.id, "approved")
        result = await calling
        assert (result.is_error, text(result)) == (False, "deleted /x")
        again = await proxied.session.call_tool("delete_file", {"path": "/x"})
    assert text(again) == "deleted /x"
    assert setup.touched() == [{"tool": "delete_file", "path": "/x"}]
    assert len(await setup.approvals()) == 1


async def test_an_edited_approval_forwards_the_edited_arguments(setup: Setup) -> None:
    async with over_stdio(setup) as proxied:
        calling, pending = await setup.asking(proxied, "transfer", {"to": "acct-9", "amount": 500})
        await setup.decide(pending.id, "approved", args={"to": "acct-9", "amount": 50})
        result = await calling
    assert text(result) == "sent 50 to acct-9"
    assert setup.touched() == [{"tool": "transfer", "to": "acct-9", "amount": 50}]


async def test_a_declined_call_is_a_tool_error_with_the_reason_and_never_runs(
    setup: Setup,
) -> None:
    async with over_stdio(setup) as proxied:
        calling, pending = await setup.asking(proxied, "delete_file", {"path": "/"})
        await setup.decide(pending.id, "declined", reason="that is the root")
        result = await calling
        again = await proxied.session.call_tool("delete_file", {"path": "/"})
    assert result.is_error
    assert "declined by U0BOSS: that is the root" in text(result)
    assert "NOT executed" in text(result)
    assert again.is_error
    assert "that is the root" in text(again)
    assert len(await setup.approvals()) == 1
    assert setup.touched() == []


async def test_nobody_deciding_in_time_is_a_tool_error_and_never_runs(setup: Setup) -> None:
    async with over_stdio(setup, "--timeout", "0.5") as proxied:
        result = await proxied.session.call_tool("transfer", {"to": "a", "amount": 1})
    assert result.is_error
    assert "nobody decided within 0.5 s" in text(result)
    assert setup.touched() == []
    [approval] = await setup.approvals()
    assert approval.state == "pending"


async def test_rules_deny_route_and_allow_before_the_annotations(setup: Setup) -> None:
    rules = setup.tmp / "rules.toml"
    rules.write_text(
        "[[rule]]\n"
        "when = \"tool == 'delete_file' && args.path.startsWith('/etc')\"\n"
        'action = "deny"\n'
        'reason = "system files are off limits"\n'
        "[[rule]]\n"
        "when = \"tool == 'transfer' && args.amount < 10\"\n"
        'action = "allow"\n'
        "[[rule]]\n"
        "when = \"tool == 'read_file' && args.path == '/secrets'\"\n"
        'action = "ask"\n'
    )
    async with over_stdio(setup, "--rules", str(rules), "--timeout", "0.3") as proxied:
        denied = await proxied.session.call_tool("delete_file", {"path": "/etc/passwd"})
        small = await proxied.session.call_tool("transfer", {"to": "a", "amount": 5})
        secret = await proxied.session.call_tool("read_file", {"path": "/secrets"})
    assert denied.is_error
    assert "system files are off limits" in text(denied)
    assert text(small) == "sent 5 to a"
    assert secret.is_error
    assert "nobody decided" in text(secret)
    assert [a.tool for a in await setup.approvals()] == ["read_file"]
    assert setup.touched() == [{"tool": "transfer", "to": "a", "amount": 5}]


async def test_with_signoff_unreachable_a_gated_call_never_runs(setup: Setup) -> None:
    nowhere = f"http://127.0.0.1:{free_port()}"
    async with over_stdio(setup, url=nowhere) as proxied:
        result = await proxied.session.call_tool("delete_file", {"path": "/x"})
        read = await proxied.session.call_tool("read_file", {"path": "/x"})
    assert result.is_error
    assert "could not be asked for" in text(result)
    assert setup.touched() == []
    assert text(read) == "contents of /x"  # what only reads does not need anyone


async def test_killed_while_waiting_then_approved_is_forwarded_once_after_a_restart(
    setup: Setup,
) -> None:
    pending = await kill_while_calling(setup, "delete_file", {"path": "/k"})
    await setup.decide(pending.id, "approved")  # lands while no proxy runs
    assert setup.touched() == []
    async with over_stdio(setup) as proxied:  # the client asks again, as after any crash
        first = await proxied.session.call_tool("delete_file", {"path": "/k"})
        second = await proxied.session.call_tool("delete_file", {"path": "/k"})
    assert text(first) == text(second) == "deleted /k"
    assert setup.touched() == [{"tool": "delete_file", "path": "/k"}]
    assert len(await setup.approvals()) == 1


async def test_killed_while_forwarding_is_in_doubt_and_never_forwarded_twice(
    setup: Setup,
) -> None:

    async def forwarded(calling: asyncio.Task[CallToolResult], pending: Approval) -> None:
        await setup.decide(pending.id, "approved")
        for _ in range(500):  # the downstream tool has run; its answer is not back yet
            if setup.touched():
                break
            await asyncio.sleep(0.02)
        assert setup.touched()
        assert not calling.done()  # killed before its answer came back

    await kill_while_calling(setup, "slow_delete", {"path": "/s"}, meanwhile=forwarded)
    async with over_stdio(setup) as proxied:
        retried = await proxied.session.call_tool("slow_delete", {"path": "/s"})
    assert retried.is_error
    assert "may have run" in text(retried)
    assert setup.touched() == [{"tool": "slow_delete", "path": "/s"}]


async def test_over_streamable_http_an_approved_call_is_forwarded(setup: Setup) -> None:
    port = free_port()
    errlog = (setup.tmp / "proxy-http.err").open("w")
    process = await asyncio.create_subprocess_exec(
        SIGNOFF, *setup.args("--http", "--port", str(port)), env=setup.env(), stderr=errlog
    )
    try:
        url = f"http://127.0.0.1:{port}/mcp"
        await listening(port)
        async with (
            streamable_http_client(url) as (read, write, *_),
            ClientSession(read, write) as session,
        ):
            await session.initialize()
            names = sorted(t.name for t in (await session.list_tools()).tools)
            calling = asyncio.create_task(session.call_tool("delete_file", {"path": "/h"}))
            pending = await setup.pending()
            await setup.decide(pending.id, "approved")
            result = await calling
            declined = asyncio.create_task(session.call_tool("delete_file", {"path": "/i"}))
            second = await setup.pending()
            await setup.decide(second.id, "declined", reason="no")
            refused = await declined
    finally:
        process.kill()
        await process.wait()
        errlog.close()
    assert names == ["delete_file", "read_file", "slow_delete", "transfer"]
    assert text(result) == "deleted /h"
    assert refused.is_error
    assert "declined by U0BOSS: no" in text(refused)
    assert setup.touched() == [{"tool": "delete_file", "path": "/h"}]
