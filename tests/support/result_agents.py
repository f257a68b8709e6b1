"""An agent whose tool's result holds a secret (a virtual card's number), for `signoff serve`
in the result-masking tests (imported through SIGNOFF_AGENTS): the policy marks the field
`sensitive_results`, so every surface masks it while the store keeps it whole."""

from __future__ import annotations

from typing import Any

from runtime import Agent
from runtime import ScriptedModel
from runtime import tool
from runtime import tool_call

CARD_NUMBER = "5500998877665544"


@tool(description="Issue a virtual card for an order.", effect="irreversible")
def issue_card(order_id: str) -> dict[str, Any]:
    return {"order_id": order_id, "card": {"card_number": CARD_NUMBER, "expires": "12/29"}}


card_issuer = Agent(
    "card-issuer",
    model=ScriptedModel([tool_call("issue_card", {"order_id": "B7"}), "Issued."]),
    tools=[issue_card],
)
