"""A result in hand is never dropped (issue 26.3): the disk fills up after a tool ran and
before its result is written; the worker keeps the result, renews its lease and writes it once
space is back. The run finishes by itself, the tool ran once, nobody is paged, on every
backend. With nothing in hand (no tool ran yet) the failure is the caller's, at once."""

from __future__ import annotations

import asyncio
import time
from dataclasses import dataclass
from dataclasses import field
from typing import cast

import pytest
from support.wrapped_store import WrappedStore

from runtime import Agent
from runtime import Runtime
from runtime import ScriptedModel
from runtime import tool
from runtime import tool_call
from store import Batch
from store import Committed
from store import EffectStatus
from store import RunStatus
from store import Store
from store import errors

FULL_FOR = 1.0
"""Seconds the disk stays full once the first result write hits it."""


@dataclass(eq=False)
class FillingDisk(WrappedStore):
    """A store whose disk fills the first time a tool's result is written, for `FULL_FOR`
    seconds: every write in that window fails as a full disk does (nothing written)."""

    full_until: float | None = field(init=False, default=None)
    refused: int = field(init=False, default=0)
    """Writes refused as a full disk refuses them."""

    async def commit(self, batch: Batch) -> Committed:
        now = time.monotonic()
        if self.full_until is None and batch.finish:
            self.full_until = now + FULL_FOR
        if self.full_until is not None and now < self.full_until:
            self.refused += 1
            raise errors.DiskFull("the database's disk is full: nothing was written")
        return await self.store.commit(batch)


@pytest.mark.parametrize("idempotent", [False, True], ids=["not-idempotent", "idempotent"])
async def test_a_result_held_through_a_full_disk_is_written_once_space_is_back(
    store: Store, idempotent: bool
) -> None:
    charged: list[str] = []

    @tool(
        description="Charge a card.",
        effect="irreversible",
        requires_approval=False,
        idempotent=idempotent,
    )
    async def charge(order: str) -> dict[str, str]:
        charged.append(order)
        return {"receipt": f"re_{order}"}

    agent = Agent(
        "charger",
        model=ScriptedModel([tool_call("charge", {"order": "A1"}), "done"]),
        tools=[charge],
    )
    disk = FillingDisk(store)
    rt = Runtime(cast(Store, disk), [agent], worker_id="w", lease_ttl=0.6)

    async with asyncio.timeout(20):
        await rt.start("charger", "Charge A1", run_id="c")

    run = await store.get_run("c")
    (effect,) = await store.list_effects("c")
    assert disk.refused >= 2  # the disk was full for several attempts
    assert (run.status, run.lease_owner) == (RunStatus.DONE, None)
    assert (effect.status, effect.result) == (EffectStatus.COMPLETED, {"receipt": "re_A1"})
    assert charged == ["A1"]
    assert await store.list_pages(open_only=False) == []


async def test_with_nothing_in_hand_a_full_disk_fails_the_call_at_once(store: Store) -> None:
    class Full(FillingDisk):
        async def commit(self, batch: Batch) -> Committed:
            self.refused += 1
            raise errors.DiskFull("the database's disk is full: nothing was written")

    agent = Agent("talker", model=ScriptedModel(["hello"]), tools=[])
    disk = Full(store)
    rt = Runtime(cast(Store, disk), [agent], worker_id="w")

    with pytest.raises(errors.DiskFull):
        async with asyncio.timeout(5):
            await rt.start("talker", "Say hello", run_id="t")
    assert disk.refused == 1
