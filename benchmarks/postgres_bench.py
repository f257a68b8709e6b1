"""PostgreSQL next to SQLite: ms per step, steps per second across worker processes, and how
soon a decision made in one process resumes its run in another.

    python benchmarks/postgres_bench.py [--rounds 3] [--runs 100] [--steps 40]
        [--workers 1 2 4] [--decisions 200] [--url postgresql://postgres@127.0.0.1/test]

- ms per step: one run of 40 steps (the runtime benchmark's `lookup` and `record` agents),
  on a fresh SQLite file and on a fresh PostgreSQL schema, one after the other in each
  round; medians over rounds, and the median of the per-round ratios.
- steps/s: the workers benchmark's workload (100 runs x 40 read steps, split across 1, 2
  and 4 processes), on each backend in turn in each round.
- decision -> resume: a worker process listens (LISTEN/NOTIFY, `runtime.runs.wakeups`) and runs
  no recovery poll; this process parks runs on an approval, then decides them one at a time
  without resuming them itself (as `signoff approvals decide` hands over), and times each
  from the decision's commit to the `run_finished` notification of its run, which the
  worker sends only after resuming the run, executing the approved tool and answering.
  PostgreSQL only: SQLite has no notifications, so there another process finds a decided
  run at its next recovery poll (30 s in `signoff serve`).

Each PostgreSQL measurement gets its own schema in the database `--url` names, dropped after.
"""

from __future__ import annotations

import argparse
import asyncio
import multiprocessing
import secrets
import statistics
import tempfile
import time
from collections.abc import Sequence
from multiprocessing.synchronize import Event

import asyncpg
from runtime_bench import agent_for
from runtime_bench import lookup
from runtime_bench import record
from runtime_bench import signoff_run
from workers_bench import sqlite_database
from workers_bench import steps_per_second

from runtime import Agent
from runtime import Reply
from runtime import Runtime
from runtime import ScriptedModel
from runtime import tool
from runtime import tool_call
from runtime.runs.wakeups import Wakeups
from store import ApprovalState
from store import Message
from store import open_store

DEFAULT_URL = "postgresql://postgres@127.0.0.1:5432/test"


class Schema:
    """A fresh schema in the benchmark database, as a store URL; dropped on exit."""

    def __init__(self, url: str) -> None:
        self.admin = url
        self.name = f"signoff_bench_{secrets.token_hex(4)}"
        self.url = f"{url}{'&' if '?' in url else '?'}search_path={self.name}"

    async def __aenter__(self) -> str:
        await _execute(self.admin, f"CREATE SCHEMA {self.name}")
        store = await open_store(self.url)
        await store.close()
        return self.url

    async def __aexit__(self, *_: object) -> None:
        await _execute(self.admin, f"DROP SCHEMA {self.name} CASCADE")


async def _execute(url: str, statement: str) -> None:
    conn = await asyncpg.connect(url)
    try:
        await conn.execute(statement)
    finally:
        await conn.close()


# ms per step


async def postgres_run(url: str, steps: int, chosen: object) -> float:
    async with Schema(url) as schema:
        store = await open_store(schema)
        agent = agent_for(steps, chosen)  # type: ignore[arg-type]
        rt = Runtime(store, [agent], worker_id="bench")
        await rt.start(agent.name, "warm up", run_id="warm-up")
        started = time.perf_counter()
        await rt.start(agent.name, "benchmark", run_id="bench")
        elapsed = time.perf_counter() - started
        run = await rt.get("bench")
        await store.close()
    if run.usage.steps != steps + 1 or run.stop_reason != "answered":
        raise SystemExit(f"the benchmark run did not finish as expected: {run}")
    return elapsed / steps * 1000


async def ms_per_step(url: str, directory: str, rounds: int, steps: int) -> None:
    print(f"ms per step, one run of {steps} steps ({rounds} rounds, medians):")
    print(f"  {'tool':>7} {'sqlite':>8} {'postgres':>9} {'ratio':>6}")
    for chosen in (lookup, record):
        lite, pg = [], []
        for _ in range(rounds):
            lite.append((await signoff_run(directory, steps, chosen))["ms_per_step"])
            pg.append(await postgres_run(url, steps, chosen))
        ratio = statistics.median(p / s for p, s in zip(pg, lite, strict=True))
        print(
            f"  {chosen.name:>7} {statistics.median(lite):>8.3f} "
            f"{statistics.median(pg):>9.3f} {ratio:>6.2f}"
        )


# steps per second across processes


def throughput(
    url: str, directory: str, rounds: int, runs: int, steps: int, workers: Sequence[int]
) -> None:
    print(f"{runs} concurrent runs x {steps} read steps, split across worker processes:")
    for count in workers:
        lite, pg = [], []
        for _ in range(rounds):
            lite.append(steps_per_second(sqlite_database(directory), count, runs, steps))
            pg.append(asyncio.run(_pg_steps_per_second(url, count, runs, steps)))
        print(
            f"  {count} worker(s): sqlite {statistics.median(lite):>7,.0f} steps/s   "
            f"postgres {statistics.median(pg):>7,.0f} steps/s"
        )


async def _pg_steps_per_second(url: str, workers: int, runs: int, steps: int) -> float:
    async with Schema(url) as schema:
        return await asyncio.to_thread(steps_per_second, schema, workers, runs, steps)


# decision -> resume across processes


@tool(description="Do the approved thing.", effect="irreversible", requires_approval=True)
async def approved_action(key: str) -> dict[str, str]:
    return {"done": key}


def gated_agent() -> Agent:
    def policy(messages: Sequence[Message]) -> object:
        if any(m.role == "tool" for m in messages):
            return "done"
        return Reply(content="asking", tool_calls=(tool_call("approved_action", {"key": "k"}),))

    return Agent("gated", model=ScriptedModel(policy), tools=[approved_action])


def listening_worker(url: str, ready: Event, stop: Event) -> None:
    async def serve() -> None:
        store = await open_store(url, migrate=False)
        rt = Runtime(store, [gated_agent()], worker_id="listener")
        wakeups = Wakeups(rt)
        if not await wakeups.start():
            raise SystemExit("the store does not listen")
        ready.set()
        await asyncio.to_thread(stop.wait)
        await wakeups.stop()
        await store.close()

    asyncio.run(serve())


async def resume_latency(url: str, decisions: int) -> list[float]:
    async with Schema(url) as schema:
        store = await open_store(schema)
        rt = Runtime(store, [gated_agent()], worker_id="decider")
        for i in range(decisions):
            await rt.start("gated", f"task {i}", run_id=f"r{i}")
        pending = await rt.approvals(state=ApprovalState.PENDING)
        spawn = multiprocessing.get_context("spawn")
        ready, stop = spawn.Event(), spawn.Event()
        worker = spawn.Process(target=listening_worker, args=(schema, ready, stop), daemon=True)
        worker.start()
        finished: asyncio.Queue[float] = asyncio.Queue()
        listener = await asyncpg.connect(schema)
        await listener.add_listener(
            await listener.fetchval("SELECT left('signoff:' || current_schema(), 63)"),
            lambda *a: finished.put_nowait(time.perf_counter()) if a[3] == "run_finished" else None,
        )
        try:
            if not await asyncio.to_thread(ready.wait, 60):
                raise SystemExit("the listening worker did not start")
            latencies = []
            for approval in pending:
                started = time.perf_counter()
                await rt.decide(approval.id, "approved", by="U_BENCH", resume=False)
                latencies.append((await asyncio.wait_for(finished.get(), 30)) - started)
        finally:
            stop.set()
            await listener.close()
            await asyncio.to_thread(worker.join, 30)
            await store.close()
    return latencies


def print_latency(latencies: list[float]) -> None:
    ms = sorted(x * 1000 for x in latencies)
    p99 = ms[min(len(ms) - 1, round(0.99 * len(ms)) - 1)]
    print(
        f"decision in one process -> its run resumed and finished in another, "
        f"{len(ms)} decisions: p50 {statistics.median(ms):.1f} ms, p99 {p99:.1f} ms, "
        f"max {ms[-1]:.1f} ms"
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--url", default=DEFAULT_URL, help="a PostgreSQL database to use")
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--runs", type=int, default=100)
    parser.add_argument("--steps", type=int, default=40)
    parser.add_argument("--workers", type=int, nargs="+", default=[1, 2, 4])
    parser.add_argument("--decisions", type=int, default=200)
    parser.add_argument("--dir", default=None, help="where to put the SQLite files")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(dir=args.dir) as directory:
        asyncio.run(ms_per_step(args.url, directory, args.rounds, args.steps))
        throughput(args.url, directory, args.rounds, args.runs, args.steps, args.workers)
    print_latency(asyncio.run(resume_latency(args.url, args.decisions)))


if __name__ == "__main__":
    main()
