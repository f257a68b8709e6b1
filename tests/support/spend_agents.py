"""A refund agent for the limits and envelopes tests, imported by worker processes and by
`signoff` subprocesses through the configuration.

Its task is the JSON call it makes (`{"tool": ..., "args": ...}`); it then answers. The tools
pay through the example world's provider (`examples.world`, in `SIGNOFF_WORLD_DB`), which
refunds once per key, like Stripe, so what was really refunded is the sum of its rows. A
refund of an order whose id starts with `fail` raises before the provider is called.
"""

from __future__ import annotations

import asyncio
import json
import os
from collections.abc import Sequence
from typing import Any

from examples import world
from runtime import Agent
from runtime import Display
from runtime import ScriptedModel
from runtime import ToolContext
from runtime import tool
from runtime import tool_call
from store import Message


def limits_config(max_cents: int) -> str:
    """A `signoff.toml` for this agent: refunds up to $100 approved at once, each customer's
    refunds limited to `max_cents` in 30 days, past which `refund_leads` (U0LEAD) decides."""
    return f"""
agents = ["spend_agents:agent"]

[policies.default]
approvers = ["U0APPROVER"]

[[policies.tools.issue_refund.rules]]
when = "args.amount_cents <= 10000"
auto_approve = true

[policies.tools.refund_leads]
approvers = ["U0LEAD"]

[limits.per_customer]
tools = ["issue_refund"]
key = "args.customer_id"
amount = "args.amount_cents"
max = {max_cents}
window = "30d"
ask = "refund_leads"
"""


def pay(kind: str, customer: str, cents: int, key: str) -> dict[str, Any]:
    """A call to the example world's payment provider, the customer its reference."""
    world.pay(kind, customer, cents, key)
    return {"kind": kind, "customer_id": customer, "amount_cents": cents}


def refunded(customer: str | None = None) -> int:
    """What was really refunded (refunds less reversals), to one customer or to all."""
    sign = {"refund": 1, "reversal": -1}
    return sum(
        sign[kind] * cents
        for kind, reference, cents, _ in world.payments()
        if kind in sign and customer in (None, reference)
    )


MONEY = Display(money={"amount_cents": "USD"})
PER_CUSTOMER = {
    "tools": ["issue_refund"],
    "key": "args.customer_id",
    "amount": "args.amount_cents",
    "max": 50000,
    "window": "30d",
    "ask": "refund_leads",
    "money": "USD",
    "each": "customer",
}
"""The limit these tests share: $500 a customer in 30 days, past it `refund_leads` asked."""
DELAY = float(os.environ.get("SIGNOFF_SPEND_TOOL_DELAY", "0"))
"""Seconds a refund takes at the provider (a crash test widens its window with it)."""


@tool(
    description="Refund an order to a customer.",
    effect="reversible",
    compensate="reverse_refund",
    requires_approval=True,
    idempotent=True,  # the provider refunds once per key: a refund in doubt is tried again
    idempotency_key=lambda args: f"refund:{args['order_id']}",
    display=MONEY,
)
async def issue_refund(
    customer_id: str,
    order_id: str,
    amount_cents: int,
    tags: dict[str, str] | None = None,
    *,
    ctx: ToolContext,
) -> dict[str, Any]:
    if order_id.startswith("fail"):
        raise RuntimeError(f"order {order_id} cannot be refunded")
    await asyncio.sleep(DELAY)
    return pay("refund", customer_id, amount_cents, ctx.idempotency_key)


@tool(
    description="Take a refund back.",
    effect="reversible",
    compensate="issue_refund",
    requires_approval=False,
    idempotent=True,
    display=MONEY,
)
async def reverse_refund(
    customer_id: str, order_id: str, amount_cents: int, *, ctx: ToolContext
) -> dict[str, Any]:
    return pay("reversal", customer_id, amount_cents, ctx.idempotency_key)


@tool(
    description="Send a customer a gift card; it cannot be taken back.",
    effect="irreversible",
    requires_approval=False,
    timeout=0.5,
    display=MONEY,
)
async def send_gift(customer_id: str, amount_cents: int, *, ctx: ToolContext) -> dict[str, Any]:
    if customer_id.startswith("slow"):  # the provider never answers: the call is in doubt
        await asyncio.sleep(5)
    return pay("gift", customer_id, amount_cents, ctx.idempotency_key)


def _call(messages: Sequence[Message]) -> Any:
    task = json.loads(next(m.content for m in messages if m.role == "user"))
    return tool_call(task["tool"], task["args"])


def task(tool_name: str, **args: Any) -> str:
    """The task of a run that makes this one call."""
    return json.dumps({"tool": tool_name, "args": args})


def refund(customer: str, order: str, cents: int) -> str:
    return task("issue_refund", customer_id=customer, order_id=order, amount_cents=cents)


agent = Agent(
    "refunds",
    model=ScriptedModel([_call, "Done."]),
    tools=[issue_refund, reverse_refund, send_gift],
)
