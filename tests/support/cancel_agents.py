"""An agent for the cancel-in-flight tests, imported by `signoff` through SIGNOFF_AGENTS: its
tool holds a room and does not return until the test creates `release` in the directory named
by SIGNOFF_TEST_MARKER (it writes `entered-<room>` there first); its compensator appends the
room to `undone` there, so the test counts compensations across processes. `hotel` holds
rooms by the room's name (its key): two runs holding one room share the hotel's one hold."""

from __future__ import annotations

import asyncio
import os
from collections.abc import Sequence
from pathlib import Path

from runtime import Agent
from runtime import ScriptedModel
from runtime import tool
from runtime import tool_call
from runtime.model import Entry
from store import Message


def _marker() -> Path:
    return Path(os.environ["SIGNOFF_TEST_MARKER"])


@tool(description="Hold a room.", effect="reversible", compensate="unhold", requires_approval=False)
async def hold(room: str) -> dict[str, str]:
    return await _held(room)


@tool(
    description="Hold a room at the hotel, which holds a room once whoever asks (its key).",
    effect="reversible",
    compensate="unhold",
    requires_approval=False,
    idempotency_key=lambda args: f"room:{args['room']}",
)
async def hold_at_hotel(room: str) -> dict[str, str]:
    return await _held(room)


async def _held(room: str) -> dict[str, str]:
    (_marker() / f"entered-{room}").write_text("in flight")
    while not (_marker() / "release").exists():  # noqa: ASYNC110 (set by another process)
        await asyncio.sleep(0.05)
    return {"held": room}


@tool(description="Give a room back.", effect="irreversible", requires_approval=False)
async def unhold(room: str) -> dict[str, str]:
    with (_marker() / "undone").open("a") as out:
        out.write(room + "\n")
    return {"released": room}


def hold_the_named_room(messages: Sequence[Message]) -> Entry:
    """The task names the room last (`Hold R1` holds R1)."""
    return tool_call("hold", {"room": str(messages[-1].content).split()[-1]})


booker = Agent("booker", model=ScriptedModel([hold_the_named_room, "Held."]), tools=[hold, unhold])


def hold_the_named_room_at_the_hotel(messages: Sequence[Message]) -> Entry:
    return tool_call("hold_at_hotel", {"room": str(messages[-1].content).split()[-1]})


hotel = Agent(
    "hotel",
    model=ScriptedModel([hold_the_named_room_at_the_hotel, "Held."]),
    tools=[hold_at_hotel, unhold],
)
