"""A worker process the runtime tests start (and often kill): drives one run of a scenario.

    python drive.py <agent> <database-url> <run-id> <task> [max-steps]

It prints the run's status as JSON if it lives to the end. Run it with `tests/runtime` on
PYTHONPATH (for `runtime_scenarios`).
"""

from __future__ import annotations

import asyncio
import json
import sys

import runtime_scenarios as scenarios

from runtime import Budget
from runtime import Runtime
from store import open_store


async def main(agent_name: str, url: str, run_id: str, task: str, max_steps: int | None) -> None:
    agent = scenarios.AGENTS[agent_name]()
    store = await open_store(url)
    try:
        rt = Runtime(
            store, [agent], worker_id=scenarios.WORKER_ID, lease_ttl=scenarios.DEAD_LEASE_TTL
        )
        budget = Budget(max_steps=max_steps) if max_steps is not None else None
        await rt.start(agent.name, task, run_id=run_id, budget=budget)
        run = await rt.get(run_id)
        print(json.dumps({"status": run.status, "stop_reason": run.stop_reason}))
    finally:
        await store.close()


if __name__ == "__main__":
    name, url, run_id, task, *rest = sys.argv[1:]
    asyncio.run(main(name, url, run_id, task, int(rest[0]) if rest else None))
