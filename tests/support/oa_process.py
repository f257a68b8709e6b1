"""One process of an OpenAI Agents SDK run gated by Signoff, for the tests that pause a run
in one process and resume it in another from the state Signoff kept with its approval:

    python -m tests.support.oa_process ask <run_key>                 prints the Paused approvals
    python -m tests.support.oa_process resume <run_key> <approval>   prints the final output

SIGNOFF_URL / SIGNOFF_API_TOKEN name the API; each refund the tool makes is appended to the
file OA_DONE names, so a test sees how often it ran, across processes."""

from __future__ import annotations

import asyncio
import json
import os
import sys

from agents import Agent
from agents import function_tool
from agents import set_tracing_disabled

from examples.stacks.openai_agents import Scripted
from signoff import AsyncClient
from signoff.adapters._gate import Gate
from signoff.adapters.openai_agents import Paused
from signoff.adapters.openai_agents import ask_signed_off
from signoff.adapters.openai_agents import resume_when_decided


@function_tool(needs_approval=True)
def refund_order(order_id: str, cents: int) -> str:
    """Refund an order."""
    with open(os.environ["OA_DONE"], "a") as done:
        done.write(json.dumps([order_id, cents]) + "\n")
    return f"refunded {cents} cents on order {order_id}"


agent = Agent(name="refunds", instructions="Refund orders.", tools=[refund_order], model=Scripted())


async def main(step: str, run_key: str, *rest: str) -> None:
    set_tracing_disabled(True)
    async with AsyncClient() as signoff:
        gate = Gate(signoff, timeout=30)
        if step == "ask":
            outcome = await ask_signed_off(agent, "Refund order 4471", gate=gate, run_key=run_key)
        else:
            outcome = await resume_when_decided(agent, rest[0], gate=gate, run_key=run_key)
    if isinstance(outcome, Paused):
        print(json.dumps({"paused": list(outcome.approval_ids)}))
    else:
        print(json.dumps({"final": outcome.final_output}))


if __name__ == "__main__":
    asyncio.run(main(*sys.argv[1:]))
