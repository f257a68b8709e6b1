"""The agent the run-queue tests serve (`SIGNOFF_AGENTS=queue_agent:agent`): a few slow read
steps, each logging which worker ran it and when, to `SIGNOFF_QUEUE_LOG` (one JSON line per
tool call: worker, run, start, end), so a test can tell who drove what, and how many at once."""

from __future__ import annotations

import asyncio
import json
import os
import time
from collections.abc import Sequence
from pathlib import Path

from runtime import Agent
from runtime import Budget
from runtime import Reply
from runtime import ScriptedModel
from runtime import ToolContext
from runtime import tool
from runtime import tool_call
from store import Message

STEPS = int(os.environ.get("SIGNOFF_QUEUE_STEPS", "5"))
SECONDS = float(os.environ.get("SIGNOFF_QUEUE_STEP_SECONDS", "0.05"))


@tool(description="Look a slow record up.", effect="read")
async def slow_lookup(key: str, *, ctx: ToolContext) -> dict[str, str]:
    started = time.time()
    await asyncio.sleep(SECONDS)
    line = {
        "worker": os.environ.get("SIGNOFF_WORKER_ID"),
        "run": ctx.run_id,
        "key": key,
        "start": started,
        "end": time.time(),
    }
    with Path(os.environ["SIGNOFF_QUEUE_LOG"]).open("a", encoding="utf-8") as log:  # noqa: ASYNC230
        log.write(json.dumps(line) + "\n")  # one short line: no thread hop needed
    return {"key": key}


def _policy(messages: Sequence[Message]) -> object:
    turn = (len(messages) - 1) // 2
    if turn >= STEPS:
        return "done"
    call = tool_call("slow_lookup", {"key": f"k{turn}"})
    return Reply(content=f"step {turn}", tool_calls=(call,))


agent = Agent(
    "queue-agent", model=ScriptedModel(_policy), tools=[slow_lookup], budget=Budget(max_steps=50)
)
