"""What an approver sees beside the call, and whether it still holds when the call runs: the
facts a tool's `context=` reads (or "context unavailable" when it fails or is slow, never
holding up the ask), the agent's stated reason, facts that changed between the ask and the
run (asked again, not run), and an approval outliving its policy's `valid_for`."""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any

import pytest

from runtime import Agent
from runtime import Policies
from runtime import Policy
from runtime import Reply
from runtime import Runtime
from runtime import ScriptedModel
from runtime import ToolContext
from runtime import tool
from runtime import tool_call
from store import Store

ORDERS: dict[str, int] = {}
PAID: list[tuple[str, int]] = []
REASON = "The customer was charged twice for order 7; refunding the duplicate charge."


def usd(cents: int) -> str:
    return f"${cents / 100:,.2f}"


def order_facts(order_id: str, amount_cents: int) -> dict[str, Any]:
    return {"order_total": usd(ORDERS[order_id]), "refunds_30d": 0}


def broken(order_id: str, amount_cents: int) -> dict[str, Any]:
    raise LookupError("the orders service is down")


def slow(order_id: str, amount_cents: int) -> dict[str, Any]:
    time.sleep(1.0)
    return {}


def refund_tool(context: Callable[..., Any]) -> Any:
    @tool(
        name="issue_refund",
        description="Refund an order.",
        effect="irreversible",
        context=context,
        context_timeout=0.3,
    )
    def issue_refund(order_id: str, amount_cents: int, *, ctx: ToolContext) -> dict[str, Any]:
        PAID.append((order_id, amount_cents))
        return {"refunded": amount_cents}

    return issue_refund


def agent(context: Callable[..., Any] = order_facts) -> Agent:
    call = tool_call("issue_refund", {"order_id": "7", "amount_cents": 2500}, id="c1")
    model = ScriptedModel([Reply(REASON, (call,)), "Refunded."])
    return Agent("refunder", model=model, tools=[refund_tool(context)])


@pytest.fixture(autouse=True)
def orders() -> None:
    ORDERS.clear()
    ORDERS["7"] = 2500
    PAID.clear()


async def actions(store: Store, run_id: str) -> list[str]:
    return [e.action for e in await store.list_events(run_id=run_id)]


async def test_the_card_shows_the_context_and_the_agents_reason(
    make_runtime: Callable[..., Runtime],
) -> None:
    rt = make_runtime([agent()])
    run_id = await rt.start("refunder", "Refund order 7", requested_by="U0REQ")
    [approval] = await rt.approvals(run_id)

    assert approval.context == {"order_total": "$25.00", "refunds_30d": 0}
    assert approval.context_digest is not None
    assert approval.agent_reason == REASON
    await rt.decide(approval.id, "approved", by="U0BOB")
    assert PAID == [("7", 2500)]


@pytest.mark.parametrize(
    ("context", "why"),
    [(broken, "LookupError: the orders service is down"), (slow, "longer than 0.3s")],
)
async def test_a_failing_or_slow_context_never_holds_up_the_ask(
    make_runtime: Callable[..., Runtime], context: Callable[..., Any], why: str
) -> None:
    rt = make_runtime([agent(context)])
    started = time.monotonic()
    run_id = await rt.start("refunder", "Refund order 7", requested_by="U0REQ")
    [approval] = await rt.approvals(run_id)

    assert time.monotonic() - started < 1.0  # the slow context was not waited for
    assert approval.state == "pending"
    assert approval.context is None
    assert why in (approval.context_error or "")


async def test_facts_that_changed_since_the_ask_are_asked_again_not_run(
    make_runtime: Callable[..., Runtime], store: Store
) -> None:
    rt = make_runtime([agent()])
    run_id = await rt.start("refunder", "Refund order 7", requested_by="U0REQ")
    [first] = await rt.approvals(run_id)
    ORDERS["7"] = 4000  # the order changed between the card and the click

    await rt.decide(first.id, "approved", by="U0BOB")

    assert PAID == []  # not run
    assert (await rt.get(run_id)).status == "waiting_approval"
    [_, again] = await rt.approvals(run_id)
    assert again.state == "pending"
    assert again.reasked is not None
    assert again.reasked["approval_id"] == first.id
    assert again.reasked["text"] == "order total was $25.00, now $40.00"
    assert again.context == {"order_total": "$40.00", "refunds_30d": 0}
    assert "facts_changed" in await actions(store, run_id)

    await rt.decide(again.id, "approved", by="U0BOB")
    assert PAID == [("7", 2500)]  # run once, on the facts approved
    assert (await rt.get(run_id)).status == "done"


async def test_an_approval_that_outlived_its_validity_is_asked_again(
    make_runtime: Callable[..., Runtime], store: Store, clock: Any
) -> None:
    policies = Policies(tools={"issue_refund": Policy(valid_for="15m")})
    rt = make_runtime([agent()], policies=policies, clock=clock)
    run_id = await rt.start("refunder", "Refund order 7", requested_by="U0REQ")
    [first] = await rt.approvals(run_id)

    await rt.decide(first.id, "approved", by="U0BOB", resume=False)  # the run waits (an outage)
    clock.advance(minutes=16)
    await rt.resume(run_id)

    assert PAID == []
    [_, again] = await rt.approvals(run_id)
    assert again.reasked is not None
    assert again.reasked["why"] == "approval_lapsed"
    assert "not run within 15m" in again.reasked["text"]
    assert "approval_lapsed" in await actions(store, run_id)
    await rt.decide(again.id, "approved", by="U0BOB")
    assert PAID == [("7", 2500)]


async def test_within_its_validity_it_runs(
    make_runtime: Callable[..., Runtime], clock: Any
) -> None:
    policies = Policies(tools={"issue_refund": Policy(valid_for="15m")})
    rt = make_runtime([agent()], policies=policies, clock=clock)
    run_id = await rt.start("refunder", "Refund order 7", requested_by="U0REQ")
    [first] = await rt.approvals(run_id)

    await rt.decide(first.id, "approved", by="U0BOB", resume=False)
    clock.advance(minutes=14)
    await rt.resume(run_id)

    assert PAID == [("7", 2500)]
