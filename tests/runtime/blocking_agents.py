"""An agent whose `async def` tool blocks the event loop (`time.sleep`, as a synchronous
HTTP client would), for the lease-keeper tests; imported by the test's own process and by
the second worker (`workers/follow_worker.py`). Each run of the tool appends a line to
`ran` in the directory SIGNOFF_TEST_MARKER names, so a second run anywhere shows."""

from __future__ import annotations

import os
import re
import time
from collections.abc import Sequence
from pathlib import Path

from runtime import Agent
from runtime import ScriptedModel
from runtime import tool
from runtime import tool_call
from runtime.model import Entry
from store import Message


@tool(description="Export a report.", effect="irreversible", requires_approval=False)
async def export_report(seconds: float) -> dict[str, bool]:
    with (Path(os.environ["SIGNOFF_TEST_MARKER"]) / "ran").open("a") as ran:
        ran.write(f"{os.getpid()}\n")
    time.sleep(seconds)  # noqa: ASYNC251 - the point: an async def tool that blocks the loop
    return {"exported": True}


def export_for_the_named_time(messages: Sequence[Message]) -> Entry:
    """`Export for 3 s` blocks the loop 3 s, then answers."""
    if any(m.role == "tool" for m in messages):
        return "Exported."
    task = next(m.content for m in messages if m.role == "user")
    return tool_call("export_report", {"seconds": float(re.findall(r"[\d.]+", task)[0])})


exporter = Agent("exporter", model=ScriptedModel(export_for_the_named_time), tools=[export_report])
