"""A small agent for the hosted-model tests, importable by a `signoff` subprocess: its tools
count their executions in a file, so a test sees whether anything ran twice."""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

from runtime import Agent
from runtime import ScriptedModel
from runtime import ToolContext
from runtime import tool

PROMPT = "You look orders up and ship them."


def _log(event: str, order_id: str) -> None:
    path = Path(os.environ["SIGNOFF_TEST_TOOL_LOG"])
    with path.open("a", encoding="utf-8") as f:
        f.write(json.dumps([event, order_id]) + "\n")


def executed() -> list[list[str]]:
    path = Path(os.environ["SIGNOFF_TEST_TOOL_LOG"])
    return (
        [json.loads(line) for line in path.read_text("utf-8").splitlines()] if path.exists() else []
    )


@tool(description="Look up an order: its amount in cents.", effect="read")
def lookup(order_id: str) -> dict[str, Any]:
    _log("lookup", order_id)
    return {"order_id": order_id, "cents": 1200}


@tool(description="Ship an order's parcel.", effect="irreversible", requires_approval=False)
def ship(order_id: str, *, ctx: ToolContext) -> dict[str, Any]:
    _log("ship", order_id)
    return {"shipped": order_id}


# The model is chosen in signoff.toml ([models.shipper]) by the tests that run `signoff`.
agent = Agent("shipper", model=ScriptedModel([]), tools=[lookup, ship], system_prompt=PROMPT)
