"""Store records built for unit tests that need one but care only about a few of its fields.

The approval, run and page tell one story: the refund agent's run "order-4471", asked by
U0ASKER, waits on approval "apr_123" of `issue_refund` (call "call_1", policy "refunds");
its page is about call "call_2". A test sets the fields its assertions read."""

from __future__ import annotations

from typing import Any

from store import Approval
from store import Checkpoint
from store import Effect
from store import Message
from store import Page
from store import Run
from store import RunStatus


def an_effect(**fields: Any) -> Effect:
    """An effect of run "r" (its own lineage) at step 1, keyed "k", with `fields` set."""
    defaults: dict[str, Any] = {
        "run_id": "r",
        "call_id": "c",
        "lineage_id": "r",
        "step": 1,
        "idempotency_key": "k",
    }
    return Effect(**(defaults | fields))


def a_checkpoint(
    seq: int, step: int, status: RunStatus, *messages: Message, run_id: str = "r", **fields: Any
) -> Checkpoint:
    """Checkpoint `seq` of run `run_id`, at `step` with `status`, adding `messages` (if any),
    with `fields` set."""
    if messages:
        fields["messages"] = messages
    return Checkpoint(run_id=run_id, seq=seq, step=step, status=status, **fields)


def a_run(**fields: Any) -> Run:
    """Run "order-4471" of the refund agent, asked by U0ASKER, with `fields` set: its own
    lineage unless `fields` names another."""
    defaults: dict[str, Any] = {
        "id": "order-4471",
        "agent": "refund-agent",
        "task": "Refund order 4471 for the cracked blender jar",
        "requested_by": "U0ASKER",
    }
    run = defaults | fields
    return Run(**({"lineage_id": run["id"]} | run))


def an_approval(**fields: Any) -> Approval:
    """Pending approval "apr_123" of a 25.00 refund on order 4471, asked by U0ASKER in call
    "call_1" of run "order-4471" under policy "refunds", with `fields` set."""
    defaults: dict[str, Any] = {
        "id": "apr_123",
        "tool": "issue_refund",
        "args": {"order_id": "4471", "amount_cents": 2500},
        "policy": "refunds",
        "run_id": "order-4471",
        "call_id": "call_1",
        "requested_by": "U0ASKER",
    }
    return Approval(**(defaults | fields))


def a_page(**fields: Any) -> Page:
    """Page of run "order-4471": its call "call_2", a `send_email` that timed out, is in doubt;
    with `fields` set."""
    defaults: dict[str, Any] = {
        "id": "pg_order-4471_call_2_in_doubt",
        "reason": "in_doubt",
        "run_id": "order-4471",
        "call_id": "call_2",
        "tool": "send_email",
        "detail": "send_email may or may not have happened: timed out after 30s.",
    }
    return Page(**(defaults | fields))
