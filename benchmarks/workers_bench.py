"""Worker processes on one SQLite file: how throughput grows past one core.

    python benchmarks/workers_bench.py [--runs 100] [--steps 40] [--workers 1 2 3] [--rounds 3]

The runtime benchmark's concurrent workload (read steps, scripted model), with the runs split
across worker processes that each hold their own Runtime and store on the same database, as
several `signoff serve` processes would: leases keep each run to one worker, and the writers
take turns at SQLite's write lock. The clock runs from the moment every worker is ready to
the moment the last run finishes.
"""

from __future__ import annotations

import argparse
import asyncio
import multiprocessing
import os
import statistics
import tempfile
import time
from multiprocessing.queues import Queue
from multiprocessing.synchronize import Barrier

from runtime_bench import agent_for, lookup

from runtime import Runtime
from store import open_store


def worker(
    path: str, index: int, runs: int, steps: int, ready: Barrier, spans: Queue[tuple[float, float]]
) -> None:
    async def drive() -> None:
        store = await open_store(f"sqlite:///{path}")
        agent = agent_for(steps, lookup)
        rt = Runtime(store, [agent], worker_id=f"worker-{index}")
        await rt.start(agent.name, "warm up", run_id=f"warm-up-{index}")
        ready.wait()
        started = time.perf_counter()
        await asyncio.gather(
            *(rt.start(agent.name, f"task {i}", run_id=f"w{index}-r{i}") for i in range(runs))
        )
        spans.put((started, time.perf_counter()))
        await store.close()

    asyncio.run(drive())


def steps_per_second(directory: str, workers: int, runs: int, steps: int) -> float:
    path = os.path.join(directory, f"workers-{workers}-{time.monotonic_ns()}.db")
    asyncio.run(_migrate(path))
    spawn = multiprocessing.get_context("spawn")  # fresh interpreters: no inherited threads
    ready, spans = spawn.Barrier(workers), spawn.Queue()
    share = runs // workers
    processes = [
        spawn.Process(target=worker, args=(path, i, share, steps, ready, spans))
        for i in range(workers)
    ]
    for process in processes:
        process.start()
    measured = [spans.get(timeout=600) for _ in processes]
    for process in processes:
        process.join()
    elapsed = max(end for _, end in measured) - min(start for start, _ in measured)
    return share * workers * (steps + 1) / elapsed


async def _migrate(path: str) -> None:
    store = await open_store(f"sqlite:///{path}")
    await store.close()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=100)
    parser.add_argument("--steps", type=int, default=40)
    parser.add_argument("--workers", type=int, nargs="+", default=[1, 2, 3])
    parser.add_argument("--rounds", type=int, default=3)
    args = parser.parse_args()
    print(f"{args.runs} runs x {args.steps} read steps, split across worker processes:")
    with tempfile.TemporaryDirectory() as directory:
        for workers in args.workers:
            rates = [
                steps_per_second(directory, workers, args.runs, args.steps)
                for _ in range(args.rounds)
            ]
            print(f"  {workers} worker(s): {statistics.median(rates):,.0f} steps/s")


if __name__ == "__main__":
    main()
