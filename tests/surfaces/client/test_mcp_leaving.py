"""The MCP proxy lets a caller that leaves go (issue 40.5), for real: a real `signoff serve`
posting cards to the local fake Slack, the proxy as a subprocess (`signoff mcp`) in front of
a downstream server written with the SDK, and SDK clients over stdio and streamable HTTP, of
both the 2025-11-25 revision (a session) and the stateless 2026-07-28 one.

- A client that closes, or is killed, while its call waits: the approval is withdrawn, its
  card says the agent stopped waiting, and an approve clicked later says so and changes
  nothing; nothing is forwarded.
- A proxy killed while a call waits cannot withdraw: its wait's heartbeat lapses, the card
  and the API say nobody is waiting for this answer now, an approve then forwards nothing,
  and the same call asked again runs once.
- A 2026-07-28 client is answered `input_required` while the approval is pending, its
  `requestState` carrying the approval's id, and its retry is answered with the decision;
  the streamable-HTTP snippet of docs/any-stack.md does exactly that.
- An HTTP proxy stopped (SIGTERM) with a call waiting lets it go and exits within seconds.
- None of it leaves a traceback in the proxy's log."""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import re
import signal
import sys
import textwrap
from asyncio.subprocess import Process
from collections.abc import AsyncIterator
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import mcp
import mcp.types as types
import pytest
from mcp.client.stdio import StdioServerParameters
from mcp.client.stdio import stdio_client
from support import SUPPORT
from support.helpers import SIGNOFF
from support.helpers import TOKEN
from support.helpers import free_port
from support.helpers import listening
from support.slack_harness import BOB
from support.slack_harness import FakeSlackProcess
from support.slack_harness import SlackServer
from support.slack_harness import approval_id_of
from support.slack_harness import card_click
from support.slack_served import serving

from tests.docs.docs_pages import ROOT
from tests.docs.docs_pages import blocks

DOWNSTREAM = SUPPORT / "mcp_downstream.py"
CALLER = SUPPORT / "mcp_caller.py"
STATELESS = "2026-07-28"
STOPPED = "withdrawn: the agent stopped waiting"
NOBODY = "nobody is waiting for this answer now"


@pytest.fixture(scope="module")
def served(
    tmp_path_factory: pytest.TempPathFactory,
) -> Iterator[tuple[SlackServer, FakeSlackProcess]]:
    """One `signoff serve` and its fake Slack for the module (they take seconds to start)."""
    with serving(tmp_path_factory.mktemp("served")) as both:
        yield both


@dataclass
class Rig:
    """One test's view of the shared server: its own proxy ledger, downstream log and
    proxy session (so its calls are its own approvals), and only the approvals and Slack
    replies that came after it started."""

    server: SlackServer
    fake: FakeSlackProcess
    tmp: Path
    before: frozenset[str]

    def env(self) -> dict[str, str]:
        return dict(os.environ) | {
            "SIGNOFF_URL": self.server.base,
            "SIGNOFF_API_TOKEN": TOKEN,
            "DOWNSTREAM_LOG": str(self.tmp / "downstream.log"),
        }

    def proxy_args(self, *options: str) -> list[str]:
        state = str(self.tmp / "proxy-ledger.db")
        proxied = ["--", sys.executable, str(DOWNSTREAM)]
        mine = ["--session", self.tmp.name, "--heartbeat", "1"]
        return ["mcp", "--state", state, *mine, *options, *proxied]

    def touched(self) -> list[dict[str, Any]]:
        """What the downstream server really did."""
        log = self.tmp / "downstream.log"
        return [json.loads(line) for line in log.read_text().splitlines()] if log.exists() else []

    def approvals(self) -> list[dict[str, Any]]:
        """This test's approvals, oldest first."""
        return [a for a in all_approvals(self.server) if a["id"] not in self.before]

    def approval(self, approval_id: str) -> dict[str, Any]:
        status, view = self.server.api("GET", f"/v1/approvals/{approval_id}")
        assert status == 200, view
        return dict(view)

    async def pending(self, count: int = 1) -> dict[str, Any]:
        """The newest pending approval, once `count` approvals were asked in all."""
        found = await self.until(
            lambda: len(a := self.approvals()) >= count and a[-1]["state"] == "pending" and a
        )
        return dict(found[-1])

    def card(self, approval_id: str) -> dict[str, Any] | None:
        found = [c for c in self.fake.cards() if approval_id_of(c) == approval_id]
        return found[0] if found else None

    async def card_saying(self, approval_id: str, words: str) -> dict[str, Any]:
        """The approval's card once its text says `words` (case aside)."""

        def said() -> dict[str, Any] | None:
            card = self.card(approval_id)
            return card if card and words.lower() in json.dumps(card["blocks"]).lower() else None

        found: dict[str, Any] = await self.until(said)
        return found

    async def until(self, check: Any, within: float = 20) -> Any:
        return await asyncio.to_thread(self.server.wait_until, check, within)


def all_approvals(server: SlackServer) -> list[dict[str, Any]]:
    status, page = server.api("GET", "/v1/approvals?limit=500")
    assert status == 200, page
    return list(page["approvals"])


@pytest.fixture
def rig(served: tuple[SlackServer, FakeSlackProcess], tmp_path: Path) -> Rig:
    server, fake = served
    before = frozenset(a["id"] for a in all_approvals(server))
    return Rig(server, fake, tmp_path, before)


def text(result: Any) -> str:
    return " ".join(getattr(part, "text", "") for part in result.content)


def quiet(log: Path) -> None:
    """The proxy left no traceback, nor the ASGI complaint of a response after the end."""
    said = log.read_text()
    assert "Traceback" not in said, said
    assert "Unexpected ASGI message" not in said, said


@contextlib.asynccontextmanager
async def stdio_proxy(rig: Rig, mode: str = "legacy") -> AsyncIterator[tuple[mcp.Client, Path]]:
    """An SDK client with the proxy as its stdio subprocess (its stderr in a file)."""
    errlog = rig.tmp / f"proxy-{len(list(rig.tmp.glob('proxy-*.err')))}.err"
    params = StdioServerParameters(command=SIGNOFF, args=rig.proxy_args(), env=rig.env())
    with errlog.open("w") as err:
        async with mcp.Client(stdio_client(params, errlog=err), mode=mode) as client:  # type: ignore[arg-type]
            yield client, errlog


def pid_of(errlog: Path) -> int:
    found = re.search(r"signoff mcp: pid (\d+)", errlog.read_text())
    assert found, errlog.read_text()
    return int(found.group(1))


@contextlib.asynccontextmanager
async def http_proxy(rig: Rig) -> AsyncIterator[tuple[str, Process, Path]]:
    """The proxy serving streamable HTTP on a free port: its URL, process and log."""
    port = free_port()
    errlog = rig.tmp / f"proxy-http-{port}.err"
    with errlog.open("wb") as err:
        process = await asyncio.create_subprocess_exec(
            SIGNOFF,
            *rig.proxy_args("--http", "--port", str(port)),
            env=rig.env(),
            stdout=asyncio.subprocess.DEVNULL,
            stderr=err,
        )
    try:
        await listening(port)
        yield f"http://127.0.0.1:{port}/mcp", process, errlog
    finally:
        if process.returncode is None:
            process.send_signal(signal.SIGTERM)
            try:
                await asyncio.wait_for(process.wait(), 10)
            except TimeoutError:
                process.kill()
                await process.wait()


def click_approve(rig: Rig, card: dict[str, Any]) -> list[dict[str, Any]]:
    """Bob clicks Approve on `card`; what Slack showed only him since (a refusal, if any)."""
    seen = len(rig.fake.ephemerals())
    status, _, _ = rig.server.slack(card_click("approve", card, user=BOB))
    assert status == 200
    return [e for e in rig.fake.ephemerals()[seen:] if e["user"] == BOB]


# a caller that leaves: withdrawn


async def test_a_stdio_client_that_closes_mid_wait_withdraws_and_a_later_approve_changes_nothing(
    rig: Rig,
) -> None:
    async with stdio_proxy(rig) as (client, errlog):
        calling = asyncio.create_task(client.call_tool("delete_file", {"path": "/x"}))
        pending = await rig.pending()
        card = await rig.card_saying(pending["id"], "Approve")
        calling.cancel()  # the client goes away with its call waiting
        with contextlib.suppress(asyncio.CancelledError):
            await calling
    withdrawn = rig.approval(pending["id"])
    assert (withdrawn["state"], withdrawn["reason"]) == ("declined", STOPPED)
    updated = await rig.card_saying(pending["id"], "Withdrawn: the agent stopped waiting")
    assert not [b for b in updated["blocks"] if b["type"] == "actions"]

    seen = len(rig.fake.ephemerals())
    click_approve(rig, card)  # a click on the card as it was
    told = await rig.until(lambda: [e for e in rig.fake.ephemerals()[seen:] if e["user"] == BOB])
    assert "This approval was withdrawn" in told[0]["text"]
    assert "(the agent stopped waiting); there is nothing to decide." in told[0]["text"]
    assert rig.approval(pending["id"]) == withdrawn
    assert rig.touched() == []
    quiet(errlog)


@pytest.mark.slow
@pytest.mark.parametrize("mode", ["legacy", STATELESS])
async def test_an_http_client_killed_mid_wait_is_let_go_and_nothing_runs(
    rig: Rig, mode: str
) -> None:
    async with http_proxy(rig) as (url, proxy, errlog):
        args = [str(CALLER), url, mode, "delete_file", '{"path": "/h"}']
        caller = await asyncio.create_subprocess_exec(sys.executable, *args, env=rig.env())
        try:
            pending = await rig.pending()
            await rig.card_saying(pending["id"], "Approve")
        finally:
            caller.kill()  # SIGKILL: it says nothing on its way out
            await caller.wait()
        withdrawn = await rig.until(lambda: (a := rig.approval(pending["id"]))["reason"] and a)
        assert (withdrawn["state"], withdrawn["reason"]) == ("declined", STOPPED)
        await rig.card_saying(pending["id"], "Withdrawn: the agent stopped waiting")
        decision = {"decision": "approved", "by": BOB}
        status, refused = rig.server.api(
            "POST", f"/v1/approvals/{pending['id']}/decision", decision
        )
        assert status == 409
        assert "there is nothing to decide" in refused["error"]
        await asyncio.sleep(1)  # had it been forwarded for nobody, it would be by now
        assert rig.touched() == []
        assert proxy.returncode is None  # the proxy serves on
    quiet(errlog)


@pytest.mark.slow
async def test_a_stdio_client_killed_mid_wait_is_let_go_by_a_proxy_that_ends_quietly(
    rig: Rig,
) -> None:
    errlog = rig.tmp / "proxy-orphaned.err"
    args = [str(CALLER), "stdio", "legacy", "delete_file", '{"path": "/o"}', SIGNOFF]
    env = rig.env() | {"PROXY_ERR": str(errlog)}
    caller = await asyncio.create_subprocess_exec(sys.executable, *args, *rig.proxy_args(), env=env)
    try:
        pending = await rig.pending()
    finally:
        caller.kill()  # its proxy loses both ends of its pipe at once
        await caller.wait()
    proxy = pid_of(errlog)
    withdrawn = await rig.until(lambda: (a := rig.approval(pending["id"]))["reason"] and a)
    assert (withdrawn["state"], withdrawn["reason"]) == ("declined", STOPPED)
    await rig.until(lambda: not alive(proxy))  # it ended on its own, no traceback behind
    assert rig.touched() == []
    quiet(errlog)


def alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    return True


# a proxy killed mid-wait: its heartbeat lapses


@pytest.mark.slow
async def test_a_proxy_killed_mid_wait_leaves_a_card_saying_nobody_waits_then_asking_again_runs(
    rig: Rig,
) -> None:
    with contextlib.suppress(Exception):
        async with stdio_proxy(rig) as (client, errlog):
            calling = asyncio.create_task(client.call_tool("delete_file", {"path": "/k"}))
            pending = await rig.pending()
            await rig.card_saying(pending["id"], "Approve")
            os.kill(pid_of(errlog), signal.SIGKILL)
            with contextlib.suppress(Exception):
                await calling
    card = await rig.card_saying(pending["id"], NOBODY)  # 1 s waits, 2 s of grace, a tick
    assert [b for b in card["blocks"] if b["type"] == "actions"]  # it may still be decided
    left = rig.approval(pending["id"])
    assert (left["state"], left["waiter_note"], left["waiter_until"]) == ("pending", NOBODY, None)

    click_approve(rig, card)
    approved = await rig.card_saying(pending["id"], "the call runs only if it is asked again")
    assert "Approved by" in json.dumps(approved["blocks"])
    await asyncio.sleep(1)
    assert rig.touched() == []  # approved for nobody: nothing ran

    async with stdio_proxy(rig) as (client, errlog):  # the same call, asked again
        first = await client.call_tool("delete_file", {"path": "/k"})
        second = await client.call_tool("delete_file", {"path": "/k"})
    assert text(first) == text(second) == "deleted /k"
    assert rig.touched() == [{"tool": "delete_file", "path": "/k"}]
    assert len(rig.approvals()) == 1
    quiet(errlog)


# the stateless revision: input_required, the approval's id carried in the retry


@pytest.mark.parametrize("transport", ["stdio", "http"])
async def test_a_stateless_client_retries_with_the_approval_and_runs_once_approved(
    rig: Rig, transport: str
) -> None:
    async with contextlib.AsyncExitStack() as stack:
        if transport == "stdio":
            client, errlog = await stack.enter_async_context(stdio_proxy(rig, STATELESS))
        else:
            url, _, errlog = await stack.enter_async_context(http_proxy(rig))
            client = await stack.enter_async_context(mcp.Client(url, mode=STATELESS))
        assert client.session.protocol_version == STATELESS
        session = client.session
        first = await session.call_tool(
            "transfer", {"to": "acct-9", "amount": 500}, allow_input_required=True
        )
        assert isinstance(first, types.InputRequiredResult)
        [pending] = rig.approvals()
        assert first.request_state is not None
        assert json.loads(first.request_state) == {"signoff_approval": pending["id"]}
        assert pending["waiter_note"] is None  # its round waited: someone was there

        again = await session.call_tool(
            "transfer",
            {"to": "acct-9", "amount": 500},
            request_state=first.request_state,
            allow_input_required=True,
        )
        assert isinstance(again, types.InputRequiredResult)  # still pending: retry
        assert again.request_state == first.request_state
        other = await session.call_tool(
            "transfer", {"to": "acct-1", "amount": 5}, request_state=first.request_state
        )
        assert isinstance(other, types.CallToolResult)
        assert other.is_error
        assert "requestState names the approval of another call" in text(other)

        card = await rig.card_saying(pending["id"], "Approve")
        click_approve(rig, card)
        await rig.until(lambda: rig.approval(pending["id"])["state"] == "approved")
        done = await client.call_tool(
            "transfer", {"to": "acct-9", "amount": 500}, request_state=first.request_state
        )
        repeated = await client.call_tool("transfer", {"to": "acct-9", "amount": 500})
    assert text(done) == text(repeated) == "sent 500 to acct-9"
    assert rig.touched() == [{"tool": "transfer", "to": "acct-9", "amount": 500}]
    assert len(rig.approvals()) == 1
    quiet(errlog)


async def test_a_stateless_call_asked_again_after_its_withdrawal_is_asked_anew(rig: Rig) -> None:
    async with stdio_proxy(rig, STATELESS) as (client, errlog):
        waiting = asyncio.create_task(client.call_tool("delete_file", {"path": "/w"}))
        first = await rig.pending()
        waiting.cancel()  # the caller gives up on this call mid-round
        with contextlib.suppress(asyncio.CancelledError):
            await waiting
        await rig.until(lambda: rig.approval(first["id"])["reason"] == STOPPED)

        asking = asyncio.create_task(client.call_tool("delete_file", {"path": "/w"}))
        second = await rig.pending(count=2)
        assert second["id"] == f"{first['id']}-2"  # a withdrawal is no one's answer
        click_approve(rig, await rig.card_saying(second["id"], "Approve"))
        done = await asking
    assert text(done) == "deleted /w"
    assert rig.touched() == [{"tool": "delete_file", "path": "/w"}]
    quiet(errlog)


async def test_an_http_proxy_stopped_mid_wait_lets_the_call_go_and_exits_quietly(rig: Rig) -> None:
    async with http_proxy(rig) as (url, proxy, errlog), mcp.Client(url, mode="legacy") as client:
        calling = asyncio.create_task(client.call_tool("delete_file", {"path": "/t"}))
        pending = await rig.pending()
        proxy.send_signal(signal.SIGTERM)
        # uvicorn stops gracefully, then lets the signal end the process as it would have
        assert await asyncio.wait_for(proxy.wait(), 10) in (0, -signal.SIGTERM)
        with pytest.raises(mcp.MCPError):  # the client hears its call ended unanswered
            await asyncio.wait_for(calling, 10)
    assert rig.approval(pending["id"])["reason"] == STOPPED
    assert rig.touched() == []
    quiet(errlog)


async def test_the_streamable_http_snippet_of_the_docs_calls_through_the_proxy(
    rig: Rig, capsys: pytest.CaptureFixture[str]
) -> None:
    [block] = [
        b.body
        for b in blocks(ROOT / "docs" / "any-stack.md")
        if b.language == "python" and "mcp.Client(" in b.body
    ]
    async with http_proxy(rig) as (url, _, errlog):
        body = block.replace("http://127.0.0.1:8765/mcp", url)
        namespace: dict[str, Any] = {}
        exec(
            compile(f"async def snippet():\n{textwrap.indent(body, '    ')}", "docs", "exec"),
            namespace,
        )
        running = asyncio.create_task(namespace["snippet"]())
        pending = await rig.pending()
        click_approve(rig, await rig.card_saying(pending["id"], "Approve"))
        await asyncio.wait_for(running, 30)
    listed, result = capsys.readouterr().out.splitlines()[-2:]
    assert listed == "['read_file', 'delete_file', 'transfer', 'slow_delete']"
    assert result == "False ['deleted /tmp/x']"
    assert rig.touched() == [{"tool": "delete_file", "path": "/tmp/x"}]
    quiet(errlog)
