"""A process the cancel-compensation crash test starts: it drives a saga run that books four
rooms, cancels it (asking to compensate) while the last booking is in flight, and SIGKILLs
itself right after the first compensation's result is committed, before the next one starts.

    python cancel_worker.py <database-url> <run-id> <worker-id>

The agent and its outside world (a text file named by SIGNOFF_CANCEL_LEDGER, one line per
tool call) live here, so the test builds the same agent.
"""

from __future__ import annotations

import asyncio
import sys
from typing import Any

from crash import room_ledger
from crash.room_ledger import die_after_first_undo
from runtime import Agent
from runtime import Runtime
from runtime import ScriptedModel
from runtime import ToolContext
from runtime import tool
from runtime import tool_call
from store import EffectStatus
from store import Store
from store import errors
from store import open_store

ROOMS = ["red", "green", "blue", "gold"]
SLOW_ROOM = "gold"
"""Its booking takes a while: the cancel comes while it runs."""
SLOW_SECONDS = 1.0
CANCELLED_BY = "U_CANCEL"


LEDGER = "SIGNOFF_CANCEL_LEDGER"


def write_ledger(tool_name: str, room: str) -> None:
    room_ledger.write_ledger(LEDGER, tool_name, room)


def ledger() -> list[tuple[str, str]]:
    """(tool, room) of every call the outside world saw, oldest first."""
    return room_ledger.read_ledger(LEDGER)  # type: ignore[return-value]


@tool(description="Book a room.", effect="reversible", compensate="unbook")
async def book(room: str, *, ctx: ToolContext) -> dict[str, Any]:
    if room == SLOW_ROOM:
        await asyncio.sleep(SLOW_SECONDS)
    write_ledger("book", room)
    return {"booked": room}


@tool(
    description="Give a room back.", effect="irreversible", requires_approval=False, idempotent=True
)
def unbook(room: str, *, ctx: ToolContext) -> dict[str, Any]:
    write_ledger("unbook", room)
    return {"freed": room}


def saga_agent() -> Agent:
    """Books each room, one step each, then answers; a cancelled run is compensated."""
    script: list[Any] = [tool_call("book", {"room": room}) for room in ROOMS]
    model = ScriptedModel([*script, "all booked"])
    return Agent("booker", model=model, tools=[book, unbook], on_failure="compensate")


async def slow_booking_started(store: Store, run_id: str) -> None:
    while True:
        try:
            effects = await store.list_effects(run_id)
        except errors.NotFound:  # not created yet
            effects = []
        if any(
            e.args.get("room") == SLOW_ROOM and e.status == EffectStatus.STARTED for e in effects
        ):
            return
        await asyncio.sleep(0.02)


async def main(url: str, run_id: str, worker_id: str) -> None:
    store = await open_store(url)
    try:
        die_after_first_undo(store)
        rt = Runtime(store, [saga_agent()], worker_id=worker_id)
        driving = asyncio.create_task(rt.start("booker", "Book the rooms", run_id=run_id))
        await slow_booking_started(store, run_id)
        print("cancelling", flush=True)
        await rt.cancel(run_id, by=CANCELLED_BY, reason="plans changed", compensate=True)
        await driving
        print("not killed", flush=True)
    finally:
        await store.close()


if __name__ == "__main__":
    asyncio.run(main(*sys.argv[1:4]))
