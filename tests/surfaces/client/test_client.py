"""The Python client against the real API over TCP: sync (`Client`, against a server in its
own thread) and async (`AsyncClient`), retries that ask once, the long-poll wait, and the
`@requires_signoff` decorator calling with approved (edited) arguments or raising."""

from __future__ import annotations

import asyncio
import subprocess
import sys
import threading
import time
from collections.abc import AsyncIterator
from typing import Any

import pytest
from aiohttp import web
from support.front import Front
from support.helpers import TOKEN
from support.helpers import Api
from support.helpers import eventually
from support.helpers import free_port
from support.live_api import LiveApi

from signoff import ApiError
from signoff import AsyncClient
from signoff import Client
from signoff import Declined
from signoff import TimedOut
from signoff import Unreachable
from signoff import requires_signoff


@pytest.fixture
def client(live: LiveApi) -> Client:
    return Client(live.url, TOKEN, backoff=0.01)


def decide_later(live: LiveApi, decision: str, delay: float = 0.3, **how: Any) -> threading.Thread:
    """A human decides, from the server's side, once the first approval shows up."""

    def act() -> None:
        deadline = time.monotonic() + 10
        while time.monotonic() < deadline:
            pending = live.run(lambda: live.rt.approvals(state="pending"))
            if pending:
                time.sleep(delay)
                chosen = pending[0].id
                live.call(live.rt.decide(chosen, decision, by="U0BOSS", **how))
                return
            time.sleep(0.05)

    thread = threading.Thread(target=act, daemon=True)
    thread.start()
    return thread


def test_importing_the_client_imports_none_of_the_server() -> None:
    code = (
        "import sys, signoff, signoff.client, signoff.decorator\n"
        "heavy = ('bot', 'runtime', 'store', 'slack_bolt', 'slack_sdk', 'aiosqlite', "
        "'asyncpg', 'apscheduler', 'celpy', 'aiohttp')\n"
        "print(sorted(m for m in sys.modules if m.split('.')[0] in heavy))\n"
    )
    found = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True, timeout=60
    )
    assert found.stdout.strip() == "[]"


# the sync client


def test_request_wait_and_decide_over_http(client: Client, live: LiveApi) -> None:
    asked = client.request("wire", {"amount": 100}, approval_id="w1", requested_by="bot")
    assert (asked.id, asked.state, asked.args) == ("w1", "pending", {"amount": 100})
    assert client.wait("w1", timeout=0.3).state == "pending"
    decided = client.decide("w1", "approved", by="U0BOSS", args={"amount": 90})
    assert (decided.state, decided.final_args) == ("approved", {"amount": 90})
    assert client.get("w1").decided_by == "U0BOSS"
    listed = client.approvals(state="approved")
    assert [a.id for a in listed.approvals] == ["w1"]


def test_wait_returns_when_the_decision_lands_not_on_a_timer(client: Client, live: LiveApi) -> None:
    client.request("wire", {"amount": 1}, approval_id="w1")
    decide_later(live, "declined", reason="not today")
    started = time.monotonic()
    decided = client.wait("w1", timeout=30)
    assert (decided.state, decided.reason) == ("declined", "not today")
    assert time.monotonic() - started < 3


def test_asking_twice_with_one_id_asks_once_and_another_request_is_refused(
    client: Client, live: LiveApi
) -> None:
    first = client.request("wire", {"amount": 1}, approval_id="w1")
    again = client.request("wire", {"amount": 1}, approval_id="w1")
    assert again.id == first.id
    assert len(live.run(lambda: live.rt.approvals())) == 1
    with pytest.raises(ApiError) as refused:
        client.request("wire", {"amount": 2}, approval_id="w1")
    assert refused.value.status == 400
    assert "exists already" in refused.value.reason


def test_a_decision_retried_after_its_answer_was_lost_is_its_answer(client: Client) -> None:
    client.request("wire", {"amount": 1}, approval_id="w1")
    client.decide("w1", "declined", by="U0BOSS", reason="no")
    assert client.decide("w1", "declined", by="U0BOSS", reason="no").state == "declined"
    with pytest.raises(ApiError) as refused:
        client.decide("w1", "approved", by="U0BOSS")
    assert refused.value.status == 409


def test_runs_start_show_and_cancel(client: Client) -> None:
    run = client.start_run("refund-agent", "Refund order 4471", run_id="r1")
    assert run.id == "r1"
    assert client.cancel("r1", reason="changed my mind").status == "cancelled"
    assert client.get_run("r1").status == "cancelled"
    assert [r.id for r in client.runs().runs] == ["r1"]


def test_a_cancel_may_ask_to_compensate(client: Client) -> None:
    """The server forbids unknown fields: the client's `compensate` is the API's."""
    client.start_run("refund-agent", "Refund order 4472", run_id="r2")
    assert client.cancel("r2", compensate=True).status == "cancelled"


def test_an_unreachable_server_is_a_clear_error_after_the_retries() -> None:
    nobody = Client(f"http://127.0.0.1:{free_port()}", TOKEN, retries=2, backoff=0.01)
    with pytest.raises(Unreachable, match="POST /v1/approvals"):
        nobody.request("wire", {})


# a front that loses the first answer: the retry must find what the first attempt made


class LosingFront(Front):
    """Forwards to the API; the first POST is forwarded, then answered 502 (answer lost)."""

    def __init__(self, upstream: str) -> None:
        super().__init__(upstream)
        self.posts = 0

    async def answer(self, request: web.Request, status: int, body: bytes) -> web.Response:
        if request.method == "POST":
            self.posts += 1
            if self.posts == 1:
                return web.Response(status=502, text="bad gateway")
        return await super().answer(request, status, body)


@pytest.fixture
async def front(api: Api) -> AsyncIterator[LosingFront]:
    made = LosingFront(str(api.client.make_url("")).rstrip("/"))
    runner = await made.start()
    yield made
    await runner.cleanup()


async def test_a_request_retried_after_a_lost_answer_asks_the_humans_once(
    front: LosingFront, api: Api
) -> None:
    async with AsyncClient(front.url, TOKEN, backoff=0.01) as signoff:
        asked = await signoff.request("wire", {"amount": 5})
    assert front.posts == 2  # the first answer was lost, the retry found the approval
    [stored] = await api.rt.approvals()
    assert stored.id == asked.id
    assert asked.state == "pending"


async def test_a_cancel_retried_after_a_lost_answer_is_its_answer(
    front: LosingFront, api: Api
) -> None:
    async with AsyncClient(front.url, TOKEN, backoff=0.01) as signoff:
        await api.rt.create("refund-agent", "Refund order 4471", run_id="r1")
        cancelled = await signoff.cancel("r1", reason="wrong order")
        assert front.posts == 2  # answered 502 once, then 409: already cancelled
        assert cancelled.status == "cancelled"
    assert (await api.rt.get("r1")).status == "cancelled"


# the async client


async def test_the_async_client_waits_for_a_decision_made_meanwhile(api: Api) -> None:
    url = str(api.client.make_url("")).rstrip("/")
    async with AsyncClient(url, TOKEN) as signoff:
        asked = await signoff.request("wire", {"amount": 5}, approval_id="w1")
        waiting = asyncio.create_task(signoff.wait(asked.id, timeout=30))
        await asyncio.sleep(0.3)
        await api.rt.decide("w1", "approved", by="U0BOSS")
        decided = await waiting
        assert (decided.state, decided.decided_by) == ("approved", "U0BOSS")
        assert (await signoff.wait("w1", timeout=0.2)).state == "approved"


# the decorator


def test_the_decorator_calls_with_the_approved_edited_arguments(
    client: Client, live: LiveApi
) -> None:
    called: list[tuple[str, int]] = []

    @requires_signoff(policy=None, client=client, timeout=30)
    def issue_refund(order_id: str, amount_cents: int = 100) -> str:
        called.append((order_id, amount_cents))
        return f"refunded {amount_cents}"

    decide_later(live, "approved", args={"order_id": "4471", "amount_cents": 60})
    assert issue_refund("4471") == "refunded 60"
    assert called == [("4471", 60)]
    [approval] = live.run(lambda: live.rt.approvals())
    assert (approval.tool, approval.args) == (
        "issue_refund",
        {"order_id": "4471", "amount_cents": 100},
    )


def test_a_declined_call_raises_declined_with_the_reason_and_never_runs(
    client: Client, live: LiveApi
) -> None:
    called: list[str] = []

    @requires_signoff(client=client, timeout=30)
    def delete_user(user_id: str) -> None:
        called.append(user_id)

    decide_later(live, "declined", reason="that is the CEO")
    with pytest.raises(Declined) as declined:
        delete_user("u1")
    assert (declined.value.reason, declined.value.decided_by) == ("that is the CEO", "U0BOSS")
    assert called == []


def test_nobody_deciding_in_time_raises_and_never_runs(client: Client) -> None:
    called: list[str] = []

    @requires_signoff(client=client, timeout=0.3)
    def wire(to: str) -> None:
        called.append(to)

    with pytest.raises(TimedOut) as timed_out:
        wire("acct-1")
    assert timed_out.value.approval.state == "pending"

    @requires_signoff(client=client, timeout=0.3, on_timeout="decline")
    def wire_or_decline(to: str) -> None:
        called.append(to)

    with pytest.raises(Declined, match="timed out"):
        wire_or_decline("acct-1")
    assert called == []


def test_a_request_id_finds_the_decision_already_made(client: Client, live: LiveApi) -> None:
    calls: list[str] = []

    @requires_signoff(client=client, timeout=30, request_id=lambda a: f"refund-{a['order']}")
    def refund(order: str) -> str:
        calls.append(order)
        return order

    decide_later(live, "approved")
    assert refund("9") == "9"
    assert refund("9") == "9"  # the same approval, approved already: no second question
    assert len(live.run(lambda: live.rt.approvals())) == 1
    assert calls == ["9", "9"]


async def test_the_decorator_gates_async_functions_too(api: Api) -> None:
    url = str(api.client.make_url("")).rstrip("/")
    signoff = AsyncClient(url, TOKEN)

    @requires_signoff(client=signoff, timeout=30)
    async def send_email(to: str, **extra: Any) -> dict[str, Any]:
        return {"to": to, **extra}

    async def approve_soon() -> None:
        [pending] = await eventually(lambda: api.rt.approvals(state="pending"))
        await api.rt.decide(pending.id, "approved", by="U0BOSS")

    approving = asyncio.create_task(approve_soon())
    assert await send_email("a@example.test", subject="hi") == {
        "to": "a@example.test",
        "subject": "hi",
    }
    await approving
    await signoff.close()


def test_a_function_that_cannot_take_its_arguments_by_name_is_refused() -> None:
    with pytest.raises(TypeError, match="by name"):

        @requires_signoff(client=Client("http://127.0.0.1:9", TOKEN))
        def positional(a: int, /) -> None: ...
