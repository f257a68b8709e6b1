"""Agents for the permission-table test, imported in the test's process and by the `signoff`
subprocess (through SIGNOFF_AGENTS): one that asks for approval and parks, one whose courier
hangs so its effect is in doubt and on-call is paged."""

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


@tool(description="Hold a seat.", effect="reversible", compensate="release", requires_approval=True)
async def hold(seat: str) -> str:
    return f"held {seat}"


@tool(description="Book a room.", effect="reversible", compensate="release", requires_approval=True)
async def book(seat: str) -> str:
    return f"booked {seat}"


@tool(description="Release a seat or a room.", effect="irreversible", requires_approval=False)
async def release(seat: str) -> str:
    return f"released {seat}"


# Their policies (the test's): `hold` waits out a cool-off, `book` may be undone for a while.
holder = Agent(
    "holder",
    model=ScriptedModel([tool_call("hold", {"seat": "s1"}), "Held."]),
    tools=[hold, release],
)
booker = Agent(
    "booker",
    model=ScriptedModel([tool_call("book", {"seat": "r1"}), "Booked."]),
    tools=[book, release],
)
