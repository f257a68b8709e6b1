"""Where a PostgreSQL step's time goes: the worker's CPU, the server's CPU and the round trips
per step, and the ceiling the machine's cores allow at that cost.

    python benchmarks/pg_cost.py [--runs 100] [--steps 40] [--rounds 3]
        [--url postgresql://postgres@127.0.0.1:5432/test]

One worker process (this one) drives `--runs` concurrent runs of `--steps` read steps (the
runtime benchmark's `lookup` agent) on a fresh schema. The worker's CPU is this process's;
the server's is the sum over every PostgreSQL process on this machine (`/proc/<pid>/stat`,
user + system), so run it on an otherwise quiet machine. The ceiling is
`cores / (worker + server CPU per step)`: the steps per second no number of workers can pass
on these cores at this cost per step. Medians over rounds.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import statistics
import time
from pathlib import Path

from pg_wire import WireCounter
from postgres_bench import DEFAULT_URL
from postgres_bench import Schema
from runtime_bench import agent_for
from runtime_bench import lookup

from runtime import Runtime
from store import open_store

TICKS = os.sysconf("SC_CLK_TCK")


def postgres_cpu_seconds() -> float:
    """User + system CPU of every process named postgres on this machine, so far."""
    total = 0
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            fields = stat.read_text().rsplit(")", 1)
            if not fields[0].endswith("(postgres"):
                continue
            parts = fields[1].split()
            total += int(parts[11]) + int(parts[12])  # utime, stime
        except (OSError, IndexError, ValueError):
            continue
    return total / TICKS


async def drive(store_url: str, runs: int, steps: int) -> tuple[float, float, float]:
    """Wall and worker CPU seconds of `runs` concurrent runs, and the server's CPU seconds."""
    store = await open_store(store_url)
    agent = agent_for(steps, lookup)
    rt = Runtime(store, [agent], worker_id="cost")
    await rt.start(agent.name, "warm up", run_id="warm-up")
    wall, cpu, server = time.perf_counter(), time.process_time(), postgres_cpu_seconds()
    await asyncio.gather(*(rt.start(agent.name, f"t{i}", run_id=f"r{i}") for i in range(runs)))
    wall, cpu = time.perf_counter() - wall, time.process_time() - cpu
    server = postgres_cpu_seconds() - server
    await store.close()
    return wall, cpu, server


async def one_round(url: str, runs: int, steps: int) -> dict[str, float]:
    """Costs measured straight to the server; round trips in a second pass through the
    counting proxy (whose own CPU would otherwise count as the worker's)."""
    total = runs * (steps + 1)
    async with Schema(url) as schema_url:
        wall, cpu, server = await drive(schema_url, runs, steps)
    async with Schema(url) as schema_url, WireCounter() as wire:
        wire_url = wire.url(schema_url)
        await (await open_store(wire_url)).close()  # migrations are not a step's
        wire.reset()
        await drive(wire_url, runs, steps)
        trips = wire.reset()
    return {
        "steps_per_s": total / wall,
        "worker_cpu_ms": cpu / total * 1000,
        "server_cpu_ms": server / total * 1000,
        "round_trips": trips / total,
    }


async def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=100)
    parser.add_argument("--steps", type=int, default=40)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--url", default=DEFAULT_URL)
    args = parser.parse_args()
    rounds = [await one_round(args.url, args.runs, args.steps) for _ in range(args.rounds)]
    median = {key: statistics.median(r[key] for r in rounds) for key in rounds[0]}
    cores = os.cpu_count() or 1
    per_step = (median["worker_cpu_ms"] + median["server_cpu_ms"]) / 1000
    print(f"{args.runs} runs x {args.steps} read steps, one worker, medians of {args.rounds}")
    print(f"  steps/s                      {median['steps_per_s']:>9.0f}")
    print(f"  worker CPU ms/step           {median['worker_cpu_ms']:>9.3f}")
    print(f"  PostgreSQL CPU ms/step       {median['server_cpu_ms']:>9.3f}")
    print(f"  round trips/step             {median['round_trips']:>9.2f}")
    print(f"  ceiling on {cores} cores (steps/s) {cores / per_step:>9.0f}")


if __name__ == "__main__":
    asyncio.run(main())
