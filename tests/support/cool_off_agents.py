"""An agent whose one gated call can be undone (issue 42.6): it holds a seat (reversible, its
compensator releases it), then answers. Its fake provider appends every call it receives to
the file `SIGNOFF_TEST_SEATS` names, so a test in this process or another one counts what
really ran (the ledger alone could not show a call made twice)."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

from runtime import Agent
from runtime import ScriptedModel
from runtime import ToolContext
from runtime import tool
from runtime import tool_call

SEATS = "SIGNOFF_TEST_SEATS"
DOWN = ".down"
"""While a file named as the seats log plus this exists, releasing a seat fails."""


def provider_calls() -> list[str]:
    """Every call the seat provider received, oldest first."""
    path = Path(os.environ[SEATS])
    return path.read_text().splitlines() if path.exists() else []


def _provider(line: str) -> None:
    with Path(os.environ[SEATS]).open("a") as calls:
        calls.write(line + "\n")


@tool(
    description="Hold a seat for the customer.",
    effect="reversible",
    compensate="release_seat",
    requires_approval=True,
)
def hold_seat(seat: str, *, ctx: ToolContext) -> dict[str, Any]:
    _provider(f"hold {seat}")
    return {"held": seat}


@tool(description="Release a held seat.", effect="irreversible", requires_approval=False)
def release_seat(seat: str, *, ctx: ToolContext) -> dict[str, Any]:
    if Path(os.environ[SEATS] + DOWN).exists():
        raise RuntimeError("the seat provider is down")
    _provider(f"release {seat}")
    return {"released": seat}


seat_agent = Agent(
    "seat-agent",
    model=ScriptedModel([tool_call("hold_seat", {"seat": "12A"}), "Done."]),
    tools=[hold_seat, release_seat],
)


book_seat = tool(
    hold_seat.fn,
    name="book_seat",
    description="Book a seat for the customer.",
    effect="reversible",
    compensate="release_seat",
    requires_approval=True,
)
"""`hold_seat` under its own name, so one policy file can give it an undo window while
`hold_seat` has a cool-off."""

booking_agent = Agent(
    "booking-agent",
    model=ScriptedModel([tool_call("book_seat", {"seat": "14C"}), "Done."]),
    tools=[book_seat, release_seat],
)


two_seats_agent = Agent(
    "two-seats-agent",
    model=ScriptedModel(
        [tool_call("book_seat", {"seat": "14C"}), tool_call("book_seat", {"seat": "14D"}), "Done."]
    ),
    tools=[book_seat, release_seat],
)
"""Books two seats, one approval each: the first can be undone while the second waits."""
