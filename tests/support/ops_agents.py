"""An agent whose tool takes a sensitive argument, for `signoff serve` in the operability
tests (imported through SIGNOFF_AGENTS). The tool writes what it received to the file in
SIGNOFF_TEST_MARKER, so a test can see that it got the argument whole."""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

from runtime import Agent
from runtime import ScriptedModel
from runtime import ToolContext
from runtime import tool
from runtime import tool_call

CARD = "4111111111111111"


@tool(description="Charge a card.", effect="irreversible", sensitive=["card_number"])
def charge_card(order_id: str, card_number: str, *, ctx: ToolContext) -> dict[str, Any]:
    Path(os.environ["SIGNOFF_TEST_MARKER"]).write_text(
        json.dumps({"order_id": order_id, "card_number": card_number})
    )
    return {"charged": order_id}


card_agent = Agent(
    "card-agent",
    model=ScriptedModel(
        [tool_call("charge_card", {"order_id": "A1", "card_number": CARD}), "Charged."]
    ),
    tools=[charge_card],
)
