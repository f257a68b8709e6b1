"""A process the rollback tests start, and often kill: rolls one run back.

    python rollback_worker.py <database-url> <run-id> <to-step> <worker-id> <mode>

Modes:
- `plain`: roll back and print the report as JSON.
- `die`: every compensator SIGKILLs this process right after the outside world recorded it.
- `slow`: every compensator sleeps a little after acting, so a test can kill the process at a
  random moment in the middle of the rollback.

It prints `rolling back` just before it starts. Run it with `tests/runtime` on PYTHONPATH.
"""

from __future__ import annotations

import asyncio
import copy
import json
import os
import signal
import sys
import time
from typing import Any

import approvals_conftest_helpers
from approvals_conftest_helpers import hold
from approvals_conftest_helpers import record
from approvals_conftest_helpers import reserve
from approvals_conftest_helpers import stock_agent

from examples import refund_agent
from runtime import Agent
from runtime import Runtime
from runtime import Tool
from runtime import ToolContext
from store import open_store

MODE = "plain"


def after_compensating() -> None:
    if MODE == "die":
        os.kill(os.getpid(), signal.SIGKILL)
    if MODE == "slow":
        time.sleep(0.15)


def _reverse_refund(order_id: str, amount_cents: int, *, ctx: ToolContext) -> dict[str, Any]:
    record("reverse_refund", order_id, -amount_cents, ctx.idempotency_key)
    result = refund_agent.reverse_refund.fn(order_id, amount_cents, ctx=ctx)
    after_compensating()
    return result


# The example's own compensator (its name, classification and key), instrumented.
reverse_refund = copy.copy(refund_agent.reverse_refund)
reverse_refund.fn = _reverse_refund


def instrumented(compensator: Tool) -> Tool:
    """One of the helpers' compensators (its name, classification and key) that calls
    `after_compensating` once it acted, with room for the slow mode's sleeps."""
    acts = compensator.fn

    def act(*args: Any, **kwargs: Any) -> Any:
        result = acts(*args, **kwargs)
        after_compensating()
        return result

    copied = copy.copy(compensator)
    copied.fn = act
    copied.timeout = 30
    return copied


release = instrumented(approvals_conftest_helpers.release)
unhold = instrumented(approvals_conftest_helpers.unhold)


def agents() -> list[Agent]:
    example = refund_agent.agent
    tools = [t for name, t in example.tools.items() if name != "reverse_refund"]
    refunds = Agent(
        example.name,
        model=example.model,
        tools=[*tools, reverse_refund],
        system_prompt=example.system_prompt,
    )
    stock = stock_agent([], tools=[reserve, release, hold, unhold])
    return [refunds, stock]


async def main(url: str, run_id: str, to_step: int, worker_id: str) -> None:
    store = await open_store(url)
    try:
        rt = Runtime(store, agents(), worker_id=worker_id)
        print("rolling back", flush=True)
        report = await rt.rollback(run_id, to_step)
        print(json.dumps(report.as_dict()), flush=True)
    finally:
        await store.close()


if __name__ == "__main__":
    url, run_id, step, worker, MODE = sys.argv[1:]
    asyncio.run(main(url, run_id, int(step), worker))
