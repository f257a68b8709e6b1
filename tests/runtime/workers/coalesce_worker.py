"""Drives a run of `peek` (a read) then `post` (irreversible, not idempotent), and kills itself
with SIGKILL inside the model call of the turn named by `SIGNOFF_TEST_DIE_AT_TURN` (once).

    python coalesce_worker.py <database-url> <ledger-dir>
"""

from __future__ import annotations

import asyncio
import os
import signal
import sys
from collections.abc import Sequence
from pathlib import Path

from runtime import Agent
from runtime import Runtime
from runtime import ScriptedModel
from runtime import tool
from runtime import tool_call
from store import Message
from store import open_store

LEDGER = Path(sys.argv[2])
SCRIPT = [tool_call("peek", {"key": "a"}), tool_call("post", {"text": "hello"}), "done"]


def note(name: str) -> None:
    with (LEDGER / name).open("a") as ledger:
        ledger.write("x\n")


@tool(description="Read something.", effect="read")
def peek(key: str) -> str:
    note("peek")
    return f"value of {key}"


@tool(description="Post something.", effect="irreversible", requires_approval=False)
def post(text: str) -> str:
    note("post")
    return f"posted {text}"


def model_turn(messages: Sequence[Message]) -> object:
    turn = sum(m.role == "assistant" for m in messages)
    marker = LEDGER / "died"
    if str(turn + 1) == os.environ.get("SIGNOFF_TEST_DIE_AT_TURN") and not marker.exists():
        marker.write_text("x")
        os.kill(os.getpid(), signal.SIGKILL)
    return SCRIPT[turn]


async def main(url: str) -> None:
    store = await open_store(url)
    try:
        agent = Agent("coalesce", model=ScriptedModel(model_turn), tools=[peek, post])
        rt = Runtime(store, [agent], worker_id="coalesce-worker")
        await rt.recover()
        await rt.start(agent.name, "peek then post", run_id="run")
    finally:
        await store.close()


if __name__ == "__main__":
    asyncio.run(main(sys.argv[1]))
