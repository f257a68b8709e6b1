"""PostgreSQL round trips per step, counted on the wire (`pg_wire.WireCounter`).

    python benchmarks/round_trips.py [--steps 40] [--url postgresql://postgres@127.0.0.1/test]

Two runs of `--steps` steps each on a fresh schema, one with a read tool (`lookup`) and one
with an irreversible tool that needs no approval (`record`). The figure is the round trips the
runs' steps cost divided by their steps, with the run's creation and end counted apart (they
happen once per run, not per step: `per run`). A warm-up run first fills asyncpg's statement
cache, as a worker's first runs do.
"""

from __future__ import annotations

import argparse
import asyncio
import itertools
from dataclasses import dataclass

from pg_wire import WireCounter
from postgres_bench import DEFAULT_URL
from postgres_bench import Schema
from runtime_bench import agent_for
from runtime_bench import lookup
from runtime_bench import record

from runtime import Runtime
from runtime import Tool
from store import open_store

run_ids = itertools.count()
STEP_KINDS = {lookup.name: "read", record.name: "irreversible"}


@dataclass(frozen=True)
class Count:
    kind: str
    steps: int
    round_trips: int
    per_run: int
    """The run's own: creating it, its lease, loading it, its answer and end."""

    @property
    def per_step(self) -> float:
        return self.round_trips / self.steps


async def count_run(rt: Runtime, wire: WireCounter, chosen: Tool, steps: int) -> int:
    """The round trips of one run of `steps` steps from start to answer."""
    agent = agent_for(steps, chosen)
    wire.reset()
    await rt.start(agent.name, "count", run_id=f"count-{next(run_ids)}")
    return wire.reset()


async def count_steps(url: str, steps: int) -> list[Count]:
    """Round trips per step for a read tool and an irreversible one: the difference between a
    run of `steps` steps and a run of one step, over `steps - 1`, so the run's creation and end
    fall out."""
    async with Schema(url) as schema_url, WireCounter() as wire:
        store = await open_store(wire.url(schema_url), pool_size=2)
        agents = [agent_for(n, tool) for n in (1, steps) for tool in (lookup, record)]
        by_name = {a.name: a for a in agents}
        rt = Runtime(store, list(by_name.values()), worker_id="round-trips")
        try:
            counts = []
            for chosen in (lookup, record):
                await count_run(rt, wire, chosen, 1)  # warm-up: prepares every statement
                one = await count_run(rt, wire, chosen, 1)
                many = await count_run(rt, wire, chosen, steps)
                per_run = one - (many - one) // (steps - 1)  # a one-step run less its step
                counts.append(Count(chosen.name, steps - 1, many - one, per_run))
            return counts
        finally:
            await store.close()


async def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--steps", type=int, default=40)
    parser.add_argument("--url", default=DEFAULT_URL)
    args = parser.parse_args()
    print(
        f"{'step':>12} {'tool':>8} {'steps':>5} {'round trips':>11} {'per step':>8} {'per run':>7}"
    )
    for count in await count_steps(args.url, args.steps):
        print(
            f"{STEP_KINDS[count.kind]:>12} {count.kind:>8} {count.steps:>5} "
            f"{count.round_trips:>11} {count.per_step:>8.2f} {count.per_run:>7}"
        )


if __name__ == "__main__":
    asyncio.run(main())
