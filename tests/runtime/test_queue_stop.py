"""Stopping the run queue stops it, even when a wake lands in the same loop turn as the stop
(a driver that ends as `stop` cancels it wakes the queue): on Python 3.11 `asyncio.wait_for`
swallowed that cancellation, and the queue went on claiming runs while its process waited
for it forever (issue 44.4: a benchmark round that never finished). Real SQLite files."""

from __future__ import annotations

import asyncio
from pathlib import Path

from support.helpers import Finished

from runtime import Agent
from runtime import Runtime
from runtime import ScriptedModel
from store import RunStatus
from store import open_store

AGENT = Agent("answers", model=ScriptedModel(lambda messages: "done"), tools=[])


async def test_a_queue_woken_as_it_stops_stops(tmp_path: Path) -> None:
    async with open_store(f"sqlite:///{tmp_path / 'q.db'}") as store:
        rt = Runtime(store, [AGENT], worker_id="w")
        queue = rt.serve_queue(capacity=2, poll=60.0)
        await rt.recover_into_queue()
        await asyncio.sleep(0.05)  # its first pass is done: it waits for a wake or the poll
        loop = queue._loop
        assert loop is not None
        assert not loop.done()

        queue.wake()  # in the same turn as the cancel, as a driver's end does
        async with asyncio.timeout(5):
            await queue.stop()

        assert loop.done()
        await rt.create("answers", "after the stop", run_id="late")
        await rt.dispatch("late", new=True)  # waits in the queue for a worker with room
        await asyncio.sleep(0.05)
        run = await rt.get("late")
        assert run.status == RunStatus.RUNNING
        assert run.lease_owner is None  # nobody claimed it


async def test_a_stopped_queue_starts_again(tmp_path: Path) -> None:
    async with open_store(f"sqlite:///{tmp_path / 'q.db'}") as store:
        told = Finished()
        rt = Runtime(store, [AGENT], told, worker_id="w")
        queue = rt.serve_queue(capacity=2, poll=60.0)
        await rt.recover_into_queue()
        await queue.stop()

        queue.start()
        await rt.create("answers", "after the restart", run_id="again")
        await rt.dispatch("again", new=True)
        async with asyncio.timeout(5):
            await told.event("again").wait()
        await queue.stop()
        assert (await rt.get("again")).status == RunStatus.DONE
