"""The smallest complete Signoff program: one irreversible tool, a human approves it.

python -m examples.quickstart
"""

import asyncio

from runtime import Agent, Runtime, ScriptedModel, ToolContext, tool, tool_call
from store import open_store


@tool(description="Send a gift card.", effect="irreversible")  # irreversible: asks a human
async def send_gift_card(email: str, cents: int, *, ctx: ToolContext) -> dict:
    # A real tool passes ctx.idempotency_key to the provider, so a retry never sends twice.
    return {"sent_to": email, "cents": cents, "key": ctx.idempotency_key}


agent = Agent(
    "gifts",
    model=ScriptedModel([tool_call("send_gift_card", {"email": "a@b.c", "cents": 500}), "Sent."]),
    tools=[send_gift_card],
)


async def main() -> None:
    store = await open_store("sqlite:///quickstart.db")
    try:
        rt = Runtime(store, agents=[agent])
        run_id = await rt.start(
            "gifts", "Send Ann a gift card", run_id="gift-ann", requested_by="U0ASKER"
        )
        print((await rt.get(run_id)).status)  # waiting_approval: nothing was sent yet
        for approval in await rt.approvals(run_id, state="pending"):
            await rt.decide(approval.id, "approved", by="U0MANAGER")  # or "declined"
        print((await rt.get(run_id)).status)  # done: sent exactly once
    finally:
        await store.close()


if __name__ == "__main__":
    asyncio.run(main())
