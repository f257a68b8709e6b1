"""The console's JSON shows what an approver is shown beside the call (issue 42.1): the facts
the tool's context function read and the agent's stated reason; and (issue 42.6) where an
approved call is in its cool-off. Real HTTP to the app `signoff serve` builds (`api_app` with
the console mounted) over a real SQLite file."""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import aiohttp
import pytest
from aiohttp import web
from support.api_support import token
from support.cool_off_agents import SEATS

from bot import console
from bot.api import api_app
from bot.tasks import Background
from runtime import Agent
from runtime import Policies
from runtime import Policy
from runtime import Runtime
from runtime import ScriptedModel
from runtime import ToolContext
from runtime import tool
from runtime import tool_call
from runtime.model import Reply
from store import open_store

SECRET = "console-secret"
BOB = "U0BOB"
REASON = "The customer was charged twice for order 7; refunding the duplicate."


def order_facts(order_id: str, amount_cents: int) -> dict[str, Any]:
    return {"order_total": "$40.00", "refunds_last_30_days": 1}


@tool(
    description="Refund an order.",
    effect="reversible",
    compensate="reverse",
    requires_approval=True,
    context=order_facts,
)
def refund(order_id: str, amount_cents: int, *, ctx: ToolContext) -> dict[str, Any]:
    return {"refunded": amount_cents}


@tool(description="Reverse a refund.", effect="irreversible", requires_approval=False)
def reverse(order_id: str, amount_cents: int, *, ctx: ToolContext) -> dict[str, Any]:
    return {"reversed": amount_cents}


call = tool_call("refund", {"order_id": "7", "amount_cents": 2500}, id="c1")
agent = Agent("refunder", model=ScriptedModel([Reply(REASON, (call,)), "Refunded."]),
              tools=[refund, reverse])  # fmt: skip


@pytest.fixture
async def served(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> AsyncIterator[tuple[Runtime, str]]:
    monkeypatch.setenv(SEATS, str(tmp_path / "seats.log"))
    store = await open_store(f"sqlite:///{tmp_path / 'signoff.db'}")
    policies = Policies(default=Policy(approvers=(BOB,)), tools={"refund": Policy(cool_off="5m")})
    rt = Runtime(store, [agent], policies=policies)
    background = Background()
    app = api_app(rt, background=background, tokens={"ops": token(SECRET, "runs:read")})
    console.mount(app)
    runner = web.AppRunner(app)
    await runner.setup()
    site = web.TCPSite(runner, "127.0.0.1", 0)
    await site.start()
    yield rt, f"http://127.0.0.1:{runner.addresses[0][1]}"
    await background.drain()
    await runner.cleanup()
    await store.close()


async def console_approval(base: str, run_id: str) -> dict[str, Any]:
    headers = {"Authorization": f"Bearer {SECRET}"}
    url = f"{base}/v1/console/runs/{run_id}"
    async with aiohttp.ClientSession() as http, http.get(url, headers=headers) as answer:
        assert answer.status == 200, await answer.text()
        view = await answer.json()
    found = [a for row in view["timeline"] for c in row["calls"] for a in c.get("approvals", [])]
    assert len(found) == 1, view
    return dict(found[0])


async def test_the_console_shows_the_context_and_the_agents_reason(
    served: tuple[Runtime, str],
) -> None:
    rt, base = served
    run_id = await rt.start("refunder", "Refund the duplicate on order 7", requested_by="U0RILEY")

    approval = await console_approval(base, run_id)

    assert approval["state"] == "pending"
    assert approval["context"] == [
        "context: order total: $40.00, refunds last 30 days: 1",
        f"the agent's reason: {REASON}",
    ]
    assert approval["cool_off"] == []


async def test_the_console_shows_the_cool_off_and_its_cancel(served: tuple[Runtime, str]) -> None:
    rt, base = served
    run_id = await rt.start("refunder", "Refund the duplicate on order 7", requested_by="U0RILEY")
    (asked,) = await rt.approvals(run_id)
    await rt.decide(asked.id, "approved", by=BOB)

    waiting = await console_approval(base, run_id)
    assert len(waiting["cool_off"]) == 1
    assert waiting["cool_off"][0].startswith("cool-off: runs at 20")
    assert waiting["cool_off"][0].endswith(" UTC unless an approver cancels it")

    await rt.cancel_cool_off(asked.id, by=BOB)

    cancelled = await console_approval(base, run_id)
    assert cancelled["cool_off"] == [
        f"cool-off: cancelled by {BOB} before it ran; nothing was done"
    ]
