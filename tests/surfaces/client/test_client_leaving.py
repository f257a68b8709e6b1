"""A caller that leaves is let go (issue 40.5), with the Python client against the real API
over TCP: a wait or a request that is cancelled (asyncio's cancel, Ctrl-C in a blocking
process) withdraws what this client asked, so the approval says the agent stopped waiting and
a later decision changes nothing; a wait on someone else's approval withdraws nothing;
`withdraw` does it on purpose, and a decision that came first is its answer."""

from __future__ import annotations

import asyncio
import os
import signal
import subprocess
import sys
import textwrap
import time
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest
from aiohttp import web
from support.front import Front
from support.helpers import TOKEN
from support.helpers import Api
from support.helpers import eventually
from support.live_api import LiveApi

from runtime import errors
from signoff import AsyncClient
from signoff import Client
from signoff import requires_signoff

STOPPED = "withdrawn: the agent stopped waiting"


def url_of(api: Api) -> str:
    return str(api.client.make_url("")).rstrip("/")


async def cancelled(task: asyncio.Task[Any]) -> None:
    """Cancel `task` once it is under way, and see it end cancelled."""
    await asyncio.sleep(0.2)
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task


async def test_a_cancelled_wait_withdraws_what_this_client_asked(api: Api) -> None:
    async with AsyncClient(url_of(api), TOKEN) as signoff:
        asked = await signoff.request("delete_file", {"path": "/x"}, approval_id="a1")
        waiting = asyncio.create_task(signoff.wait(asked.id))
        await asyncio.sleep(0.3)
        await cancelled(waiting)
        withdrawn = await api.rt.queries.approval("a1")
        assert (withdrawn.state, withdrawn.reason) == ("declined", STOPPED)
    with pytest.raises(errors.AlreadyDecided):
        await api.rt.decide("a1", "approved", by="U0BOSS")
    assert (await api.rt.queries.approval("a1")) == withdrawn


async def test_a_cancelled_wait_on_another_clients_approval_withdraws_nothing(api: Api) -> None:
    async with AsyncClient(url_of(api), TOKEN) as asker, AsyncClient(url_of(api), TOKEN) as other:
        await asker.request("delete_file", {"path": "/x"}, approval_id="a1")
        await cancelled(asyncio.create_task(other.wait("a1")))
        assert (await api.rt.queries.approval("a1")).state == "pending"
        await cancelled(asyncio.create_task(other.wait("a1", withdraw_on_cancel=True)))
        assert (await api.rt.queries.approval("a1")).reason == STOPPED  # said so: it may


async def test_an_async_gated_call_that_is_cancelled_withdraws_and_never_runs(api: Api) -> None:
    called: list[str] = []
    signoff = AsyncClient(url_of(api), TOKEN)

    @requires_signoff(client=signoff, timeout=60)
    async def delete_user(user_id: str) -> None:
        called.append(user_id)

    with pytest.raises(TimeoutError):
        await asyncio.wait_for(delete_user("u1"), 0.5)  # the caller gives up on it
    [approval] = await api.rt.approvals()
    assert (approval.state, approval.reason) == ("declined", STOPPED)
    await signoff.close()
    assert called == []


class SlowFront(Front):
    """Forwards to the API; the answer to a request for approval comes 1.5 s after the API
    gave it (the approval exists; its asker does not know yet)."""

    async def answer(self, request: web.Request, status: int, body: bytes) -> web.Response:
        if request.path == "/v1/approvals" and request.method == "POST":
            await asyncio.sleep(1.5)
        return await super().answer(request, status, body)


@pytest.fixture
async def slow(api: Api) -> AsyncIterator[SlowFront]:
    front = SlowFront(url_of(api))
    runner = await front.start()
    yield front
    await runner.cleanup()


async def test_a_request_cancelled_on_its_way_is_withdrawn(slow: SlowFront, api: Api) -> None:
    async with AsyncClient(slow.url, TOKEN) as signoff:
        asking = asyncio.create_task(signoff.request("delete_file", {"path": "/x"}))
        [made] = await eventually(lambda: api.rt.approvals())  # asked; no answer yet
        await cancelled(asking)
    withdrawn = await api.rt.queries.approval(made.id)
    assert (withdrawn.state, withdrawn.reason) == ("declined", STOPPED)


def test_withdraw_on_purpose_and_a_decision_that_came_first(live: LiveApi) -> None:
    client = Client(live.url, TOKEN)
    client.request("delete_file", {"path": "/x"}, approval_id="a1")
    client.request("delete_file", {"path": "/y"}, approval_id="a2")
    withdrawn = client.withdraw("a1")
    assert (withdrawn.state, withdrawn.reason) == ("declined", STOPPED)
    assert client.withdraw("a1") == withdrawn  # again: the same answer
    live.call(live.rt.decide("a2", "approved", by="U0BOSS"))
    assert client.withdraw("a2").state == "approved"  # decided first: that is the answer


BLOCKING = textwrap.dedent(
    """
    import signal
    import sys
    from signoff import Client

    # As in a terminal: a test run started in the background (`cmd &`) ignores SIGINT, and
    # a child inherits that, so Python would never raise KeyboardInterrupt.
    signal.signal(signal.SIGINT, signal.default_int_handler)

    client = Client()
    asked = client.request("delete_file", {"path": "/x"}, approval_id="ctrl-c")
    print("waiting", flush=True)
    client.wait(asked.id)
    """
)


def wait_until(check: Any, within: float = 10) -> None:
    """Until `check()` is truthy (here: the blocking client's long poll is under way)."""
    deadline = time.monotonic() + within
    while not check():
        assert time.monotonic() < deadline, "not in time"
        time.sleep(0.05)


def test_ctrl_c_in_a_blocking_wait_withdraws(live: LiveApi, tmp_path: Path) -> None:
    script = tmp_path / "blocking.py"
    script.write_text(BLOCKING)
    env = dict(os.environ, SIGNOFF_URL=live.url, SIGNOFF_API_TOKEN=TOKEN)
    process = subprocess.Popen(
        [sys.executable, str(script)],
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        assert process.stdout is not None
        assert process.stdout.readline().strip() == "waiting"
        wait_until(lambda: live.call(live.rt.queries.approval("ctrl-c")).waiter_until)
        process.send_signal(signal.SIGINT)
        try:
            _, err = process.communicate(timeout=20)
        except subprocess.TimeoutExpired:
            process.kill()  # and say where it was stuck: its traceback, if it printed one
            pytest.fail(f"still running 20 s after Ctrl-C; its stderr: {process.communicate()[1]}")
    finally:
        if process.poll() is None:
            process.kill()
            process.communicate()  # reaped here, not warned about in a later test
    assert process.returncode != 0
    assert "KeyboardInterrupt" in err  # the caller's own interrupt, raised on as it was
    approval = live.call(live.rt.queries.approval("ctrl-c"))
    assert (approval.state, approval.reason) == ("declined", STOPPED)
