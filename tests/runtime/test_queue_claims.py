"""The run queue asks the database for ready runs once per pass when the queue holds fewer
than its room: a claim that took fewer than its limit found the queue empty. It asked again
after every claim that took anything, so in a burst of decisions, resumed one or two at a
time, half its claim statements found nothing, on the one loop every resume waits behind
(issue 44.4). Real SQLite files."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

from runtime import Agent
from runtime import Runtime
from runtime import ScriptedModel
from runtime import tool
from runtime import tool_call
from store import open_store

released = asyncio.Event()


@tool(description="Wait for the test.", effect="read")
async def hold() -> str:
    await released.wait()
    return "held"


AGENT = Agent(
    "holds",
    model=ScriptedModel(
        lambda messages: "done" if messages[-1].role == "tool" else tool_call("hold", {})
    ),
    tools=[hold],
)


async def test_a_pass_that_finds_fewer_ready_runs_than_its_room_claims_once(
    tmp_path: Path,
) -> None:
    released.clear()
    async with open_store(f"sqlite:///{tmp_path / 'q.db'}") as store:
        rt = Runtime(store, [AGENT], worker_id="w")
        for n in range(3):
            await rt.create("holds", f"task {n}", run_id=f"r{n}")
        asked: list[tuple[int, int]] = []
        claim_runs = store.claim_runs

        async def counted(owner: str, **kwargs: Any) -> Any:
            found = await claim_runs(owner, **kwargs)
            asked.append((kwargs["limit"], len(found)))
            return found

        store.claim_runs = counted  # type: ignore[method-assign]
        all_claimed = asyncio.Event()
        claimed: list[int] = []

        def on_claimed(count: int) -> None:
            claimed.append(count)
            if sum(claimed) == 3:
                all_claimed.set()

        queue = rt.serve_queue(capacity=8, poll=60.0, on_claimed=on_claimed)
        await rt.recover_into_queue()
        async with asyncio.timeout(5):
            await all_claimed.wait()
        await asyncio.sleep(0.05)  # a second claim, if the pass made one, is made by now

        assert asked == [(8, 3)]  # not [(8, 3), (5, 0)]
        released.set()
        await queue.stop()
