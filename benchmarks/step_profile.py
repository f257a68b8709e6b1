"""The workload to profile a read step on SQLite under: runs of read steps, one after another.

    py-spy record --gil -r 400 -f raw -o raw.txt -- \
        python benchmarks/step_profile.py --runs 500 --dir /dev/shm

`--gil` keeps the samples that hold the GIL (Python's own work; SQLite's statements release
it). It prints the process's CPU per step, the figure the profile divides up.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import tempfile
import time

from runtime_bench import agent_for
from runtime_bench import lookup

from runtime import Runtime
from store import open_store


async def drive(path: str, runs: int, steps: int) -> float:
    """The process's CPU ms per step over `runs` runs of `steps` read steps."""
    store = await open_store(f"sqlite:///{path}")
    agent = agent_for(steps, lookup)
    rt = Runtime(store, [agent], worker_id="profile")
    try:
        await rt.start(agent.name, "warm up", run_id="warm-up")
        cpu = time.process_time()
        for i in range(runs):
            await rt.start(agent.name, "profile", run_id=f"p{i}")
        return (time.process_time() - cpu) / (runs * steps) * 1000
    finally:
        await store.close()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=500)
    parser.add_argument("--steps", type=int, default=40)
    parser.add_argument("--dir", default=None, help="where to put the database file")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(dir=args.dir) as directory:
        path = os.path.join(directory, "profile.db")
        cpu = asyncio.run(drive(path, args.runs, args.steps))
    print(f"{args.runs} runs x {args.steps} read steps: {cpu:.3f} ms of CPU per step")


if __name__ == "__main__":
    main()
