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
import queue
import statistics
import tempfile
import time
from multiprocessing.process import BaseProcess
from multiprocessing.queues import Queue
from multiprocessing.synchronize import Barrier

from runtime_bench import agent_for
from runtime_bench import lookup

from runtime import Runtime
from store import open_store

Result = tuple[float, float, int]
"""A worker's start and end (perf_counter) and how many of its runs finished."""


READY_TIMEOUT = 120.0
RUN_TIMEOUT = 600.0


def worker(
    url: str, index: int, runs: int, steps: int, ready: Barrier, results: Queue[Result]
) -> None:
    async def drive() -> None:
        store = await open_store(url)
        agent = agent_for(steps, lookup)
        rt = Runtime(store, [agent], worker_id=f"worker-{index}")
        await rt.start(agent.name, "warm up", run_id=f"warm-up-{index}")
        ready.wait(timeout=READY_TIMEOUT)
        started = time.perf_counter()
        ids = [f"w{index}-r{i}" for i in range(runs)]
        await asyncio.gather(*(rt.start(agent.name, f"task {i}", run_id=i) for i in ids))
        ended = time.perf_counter()
        done = [(await rt.get(i)).stop_reason == "answered" for i in ids]
        results.put((started, ended, sum(done)))
        await store.close()

    asyncio.run(drive())


def steps_per_second(url: str, workers: int, runs: int, steps: int) -> float:
    """Steps per second of `runs` runs split across `workers` processes on the (migrated,
    empty) database `url`."""
    spawn = multiprocessing.get_context("spawn")  # fresh interpreters: no inherited threads
    ready, results = spawn.Barrier(workers), spawn.Queue()
    shares = [runs // workers + (i < runs % workers) for i in range(workers)]
    processes = [
        spawn.Process(target=worker, args=(url, i, share, steps, ready, results), daemon=True)
        for i, share in enumerate(shares)
    ]
    for process in processes:
        process.start()
    measured = _collect(results, processes)
    if sum(finished for _, _, finished in measured) != runs:
        raise SystemExit(f"every run must finish; {measured} of {runs}")
    elapsed = max(end for _, end, _ in measured) - min(start for start, _, _ in measured)
    return runs * (steps + 1) / elapsed


def _collect(results: Queue[Result], processes: list[BaseProcess]) -> list[Result]:
    """Each worker's result; stops everything if a worker dies or the clock runs out."""
    measured: list[Result] = []
    deadline = time.monotonic() + READY_TIMEOUT + RUN_TIMEOUT
    while len(measured) < len(processes):
        try:
            measured.append(results.get(timeout=1))
        except queue.Empty:
            failed = [p.exitcode for p in processes if p.exitcode not in (None, 0)]
            if failed or time.monotonic() > deadline:
                for process in processes:
                    process.terminate()
                raise SystemExit(f"a worker failed (exit codes {failed}) or timed out") from None
    for process in processes:
        process.join()
    return measured


def sqlite_database(directory: str) -> str:
    url = f"sqlite:///{os.path.join(directory, f'workers-{time.monotonic_ns()}.db')}"
    asyncio.run(_migrate(url))
    return url


async def _migrate(url: str) -> None:
    store = await open_store(url)
    await store.close()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=100)
    parser.add_argument("--steps", type=int, default=40)
    parser.add_argument("--workers", type=int, nargs="+", default=[1, 2, 3])
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--dir", default=None, help="where to put the database files")
    args = parser.parse_args()
    if args.runs < max(args.workers):
        parser.error("--runs must be at least the largest --workers")
    print(f"{args.runs} runs x {args.steps} read steps, split across worker processes:")
    with tempfile.TemporaryDirectory(dir=args.dir) as directory:
        for workers in args.workers:
            rates = [
                steps_per_second(sqlite_database(directory), workers, args.runs, args.steps)
                for _ in range(args.rounds)
            ]
            print(f"  {workers} worker(s): {statistics.median(rates):,.0f} steps/s")


if __name__ == "__main__":
    main()
