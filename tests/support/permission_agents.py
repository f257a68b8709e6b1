"""Agents for the permission-table test, imported in the test's process and by the `signoff`
subprocess (through SIGNOFF_AGENTS): one that asks for approval and parks, one whose courier
hangs so its effect is in doubt and on-call is paged. (Its calls waiting out a cool-off or
in an undo window are `cool_off_agents`' seat and booking agents.)"""

from __future__ import annotations

import asyncio

from runtime import Agent
from runtime import ScriptedModel
from runtime import tool
from runtime import tool_call


@tool(description="Refund an order.", effect="irreversible", requires_approval=True)
async def refund(order: str) -> str:
    return f"refunded {order}"


@tool(
    description="Ship a parcel; the courier's API hangs.",
    effect="irreversible",
    requires_approval=False,
    timeout=0.05,
)
async def ship(parcel: str) -> str:
    await asyncio.sleep(5)
    return f"shipped {parcel}"


asker = Agent(
    "asker",
    model=ScriptedModel([tool_call("refund", {"order": "o1"}), "Refunded."]),
    tools=[refund],
)
doubter = Agent(
    "doubter", model=ScriptedModel([tool_call("ship", {"parcel": "p1"}), "Shipped."]), tools=[ship]
)
