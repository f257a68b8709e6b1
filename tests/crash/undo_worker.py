"""A process the undo crash test starts: it rolls a run back to step 0 and SIGKILLs itself
between two undos, right after the first compensation's result is committed and before the
next compensation starts (so no compensation is left `started`).

    python undo_worker.py <database-url> <run-id> <worker-id>

The booking agent and its outside world (a text file named by SIGNOFF_UNDO_LEDGER, one line
per tool call) live here, so the test builds the same agent.
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
from store import open_store

ROOMS = ["red", "green", "blue"]


LEDGER = "SIGNOFF_UNDO_LEDGER"


def write_ledger(tool_name: str, room: str, key: str) -> None:
    room_ledger.write_ledger(LEDGER, tool_name, room, key)


def ledger() -> list[tuple[str, str, str]]:
    """(tool, room, idempotency key) of every call the outside world saw, oldest first."""
    return room_ledger.read_ledger(LEDGER)  # type: ignore[return-value]


@tool(description="Book a room.", effect="reversible", compensate="unbook")
def book(room: str, *, ctx: ToolContext) -> dict[str, Any]:
    write_ledger("book", room, ctx.idempotency_key)
    return {"booked": room}


@tool(
    description="Give a room back.", effect="irreversible", requires_approval=False, idempotent=True
)
def unbook(room: str, *, ctx: ToolContext) -> dict[str, Any]:
    write_ledger("unbook", room, ctx.idempotency_key)
    return {"freed": room}


def booking_agent() -> Agent:
    """Books each room, one step each, then answers."""
    script: list[Any] = [tool_call("book", {"room": room}) for room in ROOMS]
    return Agent("booker", model=ScriptedModel([*script, "all booked"]), tools=[book, unbook])


async def main(url: str, run_id: str, worker_id: str) -> None:
    store = await open_store(url)
    try:
        die_after_first_undo(store)
        rt = Runtime(store, [booking_agent()], worker_id=worker_id)
        print("rolling back", flush=True)
        await rt.rollback(run_id, 0)
    finally:
        await store.close()


if __name__ == "__main__":
    asyncio.run(main(*sys.argv[1:4]))
