"""The refund agent: looks an order up, refunds it (with a human's approval), charges the
restocking fee approved with the refund, e-mails the customer, and answers.

What runs without a person's click, and why (`signoff serve` lists these at start-up):
- `charge` charges exactly the restocking fee the approver saw, and could edit, on the refund's
  card (`restocking_fee_cents`); a fee of 0 charges nothing.
- `send_email` only tells the customer what happened; it sends what the results say.
- `reverse_refund` is the refund's compensation: only a rollback, which a person starts,
  runs it.

Every money movement is keyed by its business identity (the order, the invoice), so the
payment provider does it once however many runs ask; a key is bound to its arguments, so a
second refund of an order for another amount is asked as a conflict, never passed off as the
first. Driven by a deterministic policy, so it
runs offline; swap `ScriptedModel(policy)` for a real model adapter to use an LLM.
`examples/demo.py` runs it end to end:

    python -m examples.demo "Refund order 4471"
"""

from __future__ import annotations

import json
import re
from collections.abc import Sequence
from typing import Any

from examples import world
from runtime import Agent, Budget, Display, ScriptedModel, ToolContext, tool, tool_call
from runtime.model import Entry
from store import Message

ORDER_URL = "https://shop.example/orders/{order_id}"
"""Where a person looks an order up (the example shop's admin page)."""
MONEY = {"amount_cents": "USD"}


@tool(
    description="Look up an order: amount, customer e-mail, invoice, restocking fee.", effect="read"
)
def lookup_order(order_id: str) -> dict[str, Any]:
    return world.order(order_id)


def usd(cents: int) -> str:
    return f"${cents / 100:,.2f}"


def refund_context(
    order_id: str, amount_cents: int, restocking_fee_cents: int = 0
) -> dict[str, Any]:
    """What an approver needs beside the refund, read from the shop and the provider when
    the card is made and again right before the refund is paid."""
    found = world.order(order_id)
    return {"order_total": usd(found["amount_cents"]), "customer": found["customer_email"]}


@tool(
    description=(
        "Refund an order; the restocking fee to charge afterwards is approved with it (0 for none)."
    ),
    effect="reversible",
    compensate="reverse_refund",
    requires_approval=True,
    timeout=30,
    # The order is the refund's business identity, and the key is bound to the arguments:
    # a second request to refund the order with the same amount (a retried request) is the
    # same refund, made once at the provider; one with another amount is a conflict, never
    # a replay of the first refund's receipt: its card says what was refunded, by which run,
    # and the approver declines it or approves it as a separate refund (re-keyed).
    # A refund a rollback reversed is spent: the order's next refund is a new one.
    idempotency_key=lambda args: f"refund:{args['order_id']}:{world.reversals(args['order_id'])}",
    # How the call reads to a person: "Refund $25.00 on order 4471", not "2500 cents".
    display=Display(
        title="Refund {amount_cents} on order {order_id}",
        money={"amount_cents": "USD", "restocking_fee_cents": "USD"},
        links={"order_id": ORDER_URL},
    ),
    # The card shows the order's total and its customer; if either changed by the time the
    # refund is paid, it is asked again instead.
    context=refund_context,
)
def issue_refund(
    order_id: str, amount_cents: int, restocking_fee_cents: int = 0, *, ctx: ToolContext
) -> dict[str, Any]:
    # The provider checks Signoff's signed receipt of the approval before it pays.
    args = {
        "order_id": order_id,
        "amount_cents": amount_cents,
        "restocking_fee_cents": restocking_fee_cents,
    }
    world.check_receipt(ctx.approval_receipt, args, ctx.idempotency_key)
    receipt = world.pay("refund", order_id, amount_cents, ctx.idempotency_key)
    return {**receipt, "restocking_fee_cents": restocking_fee_cents}


@tool(
    description=(
        "Take back a refund that should not have been issued (run only by a rollback, "
        "which a person starts)."
    ),
    effect="irreversible",
    requires_approval=False,
    idempotent=True,
    timeout=30,
    display=Display(title="Reverse the {amount_cents} refund on order {order_id}", money=MONEY),
)
def reverse_refund(order_id: str, amount_cents: int, *, ctx: ToolContext) -> dict[str, Any]:
    return world.pay("refund_reversal", order_id, -amount_cents, ctx.idempotency_key)


@tool(
    description=(
        "Charge the restocking fee that was approved with the refund, on the order's invoice."
    ),
    effect="irreversible",
    requires_approval=False,
    idempotent=True,
    timeout=30,
    idempotency_key=lambda args: f"{args['invoice_id']}:{args['amount_cents']}",
    display=Display(title="Charge {amount_cents} on invoice {invoice_id}", money=MONEY),
)
def charge(invoice_id: str, amount_cents: int, *, ctx: ToolContext) -> dict[str, Any]:
    return world.pay("charge", invoice_id, amount_cents, ctx.idempotency_key)


@tool(
    description="E-mail the customer what happened to their refund (informational).",
    effect="irreversible",
    requires_approval=False,
    timeout=30,
)
def send_email(to: str, subject: str, body: str, *, ctx: ToolContext) -> dict[str, Any]:
    return world.send(to, subject, ctx.idempotency_key)


def policy(messages: Sequence[Message]) -> Entry:
    """What a careful refund agent does next, given the transcript so far."""
    task = next(m.content for m in messages if m.role == "user")
    match = re.search(r"order\s+#?(\w+)", task, re.IGNORECASE)
    if match is None:
        return "I need an order number to refund, e.g. 'Refund order 4471'."
    results = _results(messages)
    found = results.get("lookup_order")
    if found is None:
        return tool_call("lookup_order", {"order_id": match[1]})
    refund = results.get("issue_refund")
    if refund is None:
        proposed = {
            "order_id": found["order_id"],
            "amount_cents": _asked_cents(task, found["amount_cents"]),
            "restocking_fee_cents": found["restocking_fee_cents"],
        }
        return tool_call("issue_refund", proposed)
    # A dry run's refund did not happen but would have: its story goes on as a refund's.
    refunded = _dry_run(refund) or ("executed" not in refund and "error" not in refund)
    # As approved (maybe edited); a result settled by hand may not say, then as proposed.
    fee = _refunded_args(refund).get(
        "restocking_fee_cents", _proposed(messages, "issue_refund").get("restocking_fee_cents", 0)
    )
    if refunded and fee and "charge" not in results:
        return tool_call("charge", {"invoice_id": found["invoice_id"], "amount_cents": fee})
    if "send_email" not in results:
        subject = (
            f"Your refund for order {found['order_id']}"
            if refunded
            else f"About your refund request for order {found['order_id']}"
        )
        body = (
            "Your refund is on its way."
            if refunded
            else f"We could not refund this order: {refund.get('reason', 'declined')}."
        )
        return tool_call(
            "send_email", {"to": found["customer_email"], "subject": subject, "body": body}
        )
    return _answer(found["order_id"], refund, results)


def _asked_cents(task: str, order_cents: int) -> int:
    """A task that names an amount ("Refund order 4471 for $25") refunds that much, never
    more than the order; otherwise the whole order."""
    match = re.search(r"\bfor\s+\$(\d{1,9})(?:\.(\d{2}))?\b", task)
    if match is None:
        return order_cents
    return min(order_cents, int(match[1]) * 100 + int(match[2] or 0))


def _answer(order_id: str, refund: dict[str, Any], results: dict[str, Any]) -> str:
    """The final answer says what the results say happened, not what was planned."""
    if _dry_run(refund):
        return _dry_run_answer(order_id, refund, results)
    emailed = _succeeded(results.get("send_email"))
    told = "told the customer" if emailed else "could NOT e-mail the customer"
    if "executed" in refund or "error" in refund:
        return f"The refund for order {order_id} was not made; I {told}."
    charged = results.get("charge")
    fee = (
        ""
        if charged is None
        else (
            " and charged the restocking fee"
            if _succeeded(charged)
            else "; the restocking fee could NOT be charged"
        )
    )
    return f"Refunded order {order_id} ({refund.get('amount_cents')} cents){fee}; I {told}."


def _dry_run_answer(order_id: str, refund: dict[str, Any], results: dict[str, Any]) -> str:
    """What would have happened, and that none of it did."""
    cents = _refunded_args(refund).get("amount_cents")
    fee = " and charged the restocking fee" if _dry_run(results.get("charge")) else ""
    told = " and e-mailed the customer" if _dry_run(results.get("send_email")) else ""
    return (
        f"Dry run: I would have refunded order {order_id} ({cents} cents){fee}{told}; "
        "nothing was done."
    )


def _dry_run(result: Any) -> bool:
    return isinstance(result, dict) and result.get("dry_run") is True


def _refunded_args(refund: dict[str, Any]) -> dict[str, Any]:
    """What the refund was (or, in a dry run, would have been) made with."""
    return dict(refund.get("args") or {}) if _dry_run(refund) else refund


def _succeeded(result: Any) -> bool:
    return isinstance(result, dict) and "executed" not in result and "error" not in result


def _proposed(messages: Sequence[Message], tool: str) -> dict[str, Any]:
    """The arguments of the latest call of `tool` in the transcript."""
    calls = [c for m in messages for c in m.tool_calls if c.name == tool]
    return dict(calls[-1].arguments) if calls else {}


def _results(messages: Sequence[Message]) -> dict[str, Any]:
    """The latest result of each tool, parsed from the tool messages."""
    out: dict[str, Any] = {}
    for m in messages:
        if m.role == "tool" and m.name:
            try:
                out[m.name] = json.loads(m.content)
            except json.JSONDecodeError:
                out[m.name] = {"text": m.content}
    return out


agent = Agent(
    "refund-agent",
    model=ScriptedModel(policy, cost_per_1k_input=0.003, cost_per_1k_output=0.015),
    tools=[lookup_order, issue_refund, reverse_refund, charge, send_email],
    system_prompt="You handle refund requests. Never refund without a human's approval.",
    budget=Budget(max_steps=12),
)
