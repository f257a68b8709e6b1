"""Agents for the CLI tests, imported by the `signoff` subprocess through SIGNOFF_AGENTS."""

from __future__ import annotations

import asyncio
import os
from pathlib import Path

from runtime import Agent
from runtime import ScriptedModel
from runtime import tool
from runtime import tool_call


@tool(
    description="Ship a parcel; the courier's API hangs the first time.",
    effect="irreversible",
    requires_approval=False,
    timeout=0.2,
)
async def ship(parcel: str) -> str:
    if await asyncio.to_thread(first_time, Path(os.environ["SIGNOFF_TEST_MARKER"])):
        await asyncio.sleep(5)
    return f"shipped {parcel}"


def first_time(marker: Path) -> bool:
    if marker.exists():
        return False
    marker.write_text("hung once")
    return True


shipper = Agent(
    "shipper", model=ScriptedModel([tool_call("ship", {"parcel": "p1"}), "Shipped."]), tools=[ship]
)
