"""An agent whose tools raise, imported by `signoff` through SIGNOFF_AGENTS
(`outcome_agents:crm`): `delete_customer` asks for approval, then the CRM answers 503 (so
does `find_customer`, a read that asks no one). The agent then answers politely, as a model
would; the run must not read as done."""

from __future__ import annotations

import json
import re
from collections.abc import Sequence

from runtime import Agent
from runtime import ScriptedModel
from runtime import tool
from runtime import tool_call
from runtime.model import Entry
from store import Message


class CrmUnavailable(RuntimeError):
    """The CRM did not answer the request."""


@tool(description="Delete a customer from the CRM.", effect="irreversible")
def delete_customer(customer_id: str) -> dict[str, str]:
    raise CrmUnavailable(f"the CRM answered 503 Service Unavailable for customer {customer_id}")


@tool(description="Find a customer in the CRM.", effect="read")
def find_customer(customer_id: str) -> dict[str, str]:
    raise CrmUnavailable(f"the CRM answered 503 Service Unavailable for customer {customer_id}")


def delete_the_named_customer(messages: Sequence[Message]) -> Entry:
    """`Delete customer 7` deletes customer 7 (`Find customer 7` looks it up), then says
    how that went."""
    task = next(m.content for m in messages if m.role == "user")
    customer = (re.findall(r"\w+", task) or ["?"])[-1]
    results = [json.loads(m.content) for m in messages if m.role == "tool"]
    if not results:
        name = "find_customer" if task.startswith("Find") else "delete_customer"
        return tool_call(name, {"customer_id": customer})
    if "error" in results[-1] or results[-1].get("executed") is False:
        return f"I could not delete customer {customer}; please try again later."
    return f"Customer {customer} is deleted."


crm = Agent(
    "crm-agent",
    model=ScriptedModel(delete_the_named_customer),
    tools=[delete_customer, find_customer],
)
