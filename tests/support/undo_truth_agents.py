"""Agents whose approved call may be undone (issue 42.6), with a provider a test controls:
its hold can be made to wait (so a test looks at the call while it runs), or to fail, and its
release can be made to fail until the provider is back. Each call the provider received is
in `PROVIDER.calls` with its idempotency key, so a test sees a compensation done twice.
`fresh_provider` is an autouse fixture a test module takes by importing it."""

from __future__ import annotations

import asyncio
from collections.abc import Iterator
from dataclasses import dataclass
from dataclasses import field
from typing import Any

import pytest

from runtime import Agent
from runtime import ScriptedModel
from runtime import ToolContext
from runtime import tool
from runtime import tool_call


@dataclass
class Provider:
    calls: list[tuple[str, str]] = field(default_factory=list)
    hold_fails: bool = False
    release_down: bool = False
    holding: asyncio.Event | None = None
    """Set: `hold` waits on `go` once it has begun (and sets this)."""
    go: asyncio.Event | None = None

    def reset(self) -> None:
        self.calls.clear()
        self.hold_fails = self.release_down = False
        self.holding = self.go = None


PROVIDER = Provider()


@pytest.fixture(autouse=True)
def fresh_provider() -> Iterator[None]:
    """The provider as new before and after each test of a module that imports this."""
    PROVIDER.reset()
    yield
    PROVIDER.reset()


@tool(
    description="Hold a seat for the customer.",
    effect="reversible",
    compensate="release",
    requires_approval=True,
)
async def hold(seat: str, *, ctx: ToolContext) -> dict[str, Any]:
    if PROVIDER.holding is not None and PROVIDER.go is not None:
        PROVIDER.holding.set()
        await PROVIDER.go.wait()
    if PROVIDER.hold_fails:
        raise RuntimeError("the seat provider refused the hold")
    PROVIDER.calls.append((f"hold {seat}", ctx.idempotency_key))
    return {"held": seat}


@tool(description="Release a held seat.", effect="irreversible", requires_approval=False)
async def release(seat: str, *, ctx: ToolContext) -> dict[str, Any]:
    if PROVIDER.release_down:
        raise RuntimeError("the seat provider is down")
    PROVIDER.calls.append((f"release {seat}", ctx.idempotency_key))
    return {"released": seat}


holder = Agent(
    "holder",
    model=ScriptedModel([tool_call("hold", {"seat": "9F"}), "Done."]),
    tools=[hold, release],
)
