"""What the rolling-upgrade tests serve (`SIGNOFF_AGENTS=upgrade_agent:agent`): the refund
agent on the outside world `SIGNOFF_WORLD_DB`, its model logged to `SIGNOFF_UPGRADE_LOG`
(one JSON line when a call is asked and one when it is answered: worker, run, time) and
slowed by `SIGNOFF_UPGRADE_MODEL_SECONDS`.

- `SIGNOFF_UPGRADE_GATE`: a file each model call waits for (a worker that holds its runs'
  leases, mid-step, for as long as a test likes).
- `SIGNOFF_UPGRADE_FUTURE=safe|unsafe`: this process is the newer release. It knows one
  migration more (`support.future_schema`), marked so, and applies it at start-up as
  `signoff serve` does; `python newer_cli.py db migrate` is its `signoff`.
"""

from __future__ import annotations

import asyncio
import json
import os
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from future_schema import install  # tests/support, on this process's path

from examples import refund_agent
from runtime import Agent
from runtime import Reply
from runtime import ScriptedModel
from runtime import ToolSpec
from store import Message

if future := os.environ.get("SIGNOFF_UPGRADE_FUTURE"):
    install(safe=future == "safe")

SECONDS = float(os.environ.get("SIGNOFF_UPGRADE_MODEL_SECONDS", "0.05"))


def _log(event: str, messages: Sequence[Message]) -> None:
    task = next(m.content for m in messages if m.role == "user")
    line = {"event": event, "worker": os.environ.get("SIGNOFF_WORKER_ID"), "task": task}
    with Path(os.environ["SIGNOFF_UPGRADE_LOG"]).open("a", encoding="utf-8") as log:
        log.write(json.dumps(line | {"at": time.time()}) + "\n")


class LoggedModel:
    """The refund agent's policy, slowed, gated and logged (the same identity as the script,
    so a run moves between workers of both releases)."""

    def __init__(self) -> None:
        self.script = ScriptedModel(refund_agent.policy)

    def identity(self) -> dict[str, Any]:
        return self.script.identity()

    async def complete(self, messages: Sequence[Message], tools: Sequence[ToolSpec]) -> Reply:
        _log("asked", messages)
        await asyncio.sleep(SECONDS)
        gate = os.environ.get("SIGNOFF_UPGRADE_GATE")
        # a file another process creates: polled, a stat each time
        while gate and not Path(gate).exists():  # noqa: ASYNC110, ASYNC240
            await asyncio.sleep(0.02)
        reply = await self.script.complete(messages, tools)
        _log("answered", messages)
        return reply


agent = Agent(
    refund_agent.agent.name,
    model=LoggedModel(),
    tools=list(refund_agent.agent.tools.values()),
    system_prompt=refund_agent.agent.system_prompt,
    budget=refund_agent.agent.budget,
)
