"""An agent for the "approve + similar" tests, imported by `signoff` subprocesses through
the configuration: its task is the JSON call it makes (`{"tool": ..., "args": ...}`)."""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any

from runtime import Agent
from runtime import ScriptedModel
from runtime import ToolContext
from runtime import tool
from runtime import tool_call
from store import Message


@tool(
    description="Refund an order.",
    effect="reversible",
    compensate="reverse_refund",
    requires_approval=True,
)
async def issue_refund(
    order_id: str, amount_cents: int, currency: str, *, ctx: ToolContext
) -> dict[str, Any]:
    return {"refunded": amount_cents}


@tool(description="Take a refund back.", effect="reversible", compensate="issue_refund")
async def reverse_refund(
    order_id: str, amount_cents: int, currency: str, *, ctx: ToolContext
) -> dict[str, Any]:
    return {"reversed": amount_cents}


@tool(description="Wire money out; it cannot be taken back.", effect="irreversible")
async def send_wire(account: str, amount_cents: int, *, ctx: ToolContext) -> dict[str, Any]:
    return {"sent": amount_cents}


def _call(messages: Sequence[Message]) -> Any:
    task = json.loads(next(m.content for m in messages if m.role == "user"))
    return tool_call(task["tool"], task["args"])


agent = Agent(
    "ops",
    model=ScriptedModel([_call, "Done."]),
    tools=[issue_refund, reverse_refund, send_wire],
)
