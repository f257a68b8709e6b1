"""Decisions to resumed runs through the run queue: a burst of decisions, each timed to its
run's next model call.

    python benchmarks/resume_bench.py [--runs 200] [--rounds 3] [--poll 10] [--capacity 32]
        [--url postgresql://postgres@127.0.0.1:5432/test]

`--runs` runs park on one approval each (an irreversible tool). Then every decision is made
at once, as a burst of clicks reaches `signoff serve`: `Runtime.decide(..., resume=False)`
(what the Slack listener awaits before its ack) and then `after_decision` (what it runs
after). Each is timed from just before its `decide` to the moment its run's model is
called again (the run claimed from the queue, its state loaded, the approved tool run and
recorded). Printed: p50, p99 and max per round, and the queue's poll interval, the wait a
decision would have without a wake (up to `--poll` seconds, `worker_poll_seconds`).

- SQLite (the default): one process, whose queue (`capacity` runs at once, as `serve`'s
  `worker_capacity`) is woken in-process by each decision.
- `--url postgresql://...`: the decisions are made through a second store and runtime with
  no queue (another `serve` process, as far as the database can tell), so the worker's queue
  hears of them only through LISTEN/NOTIFY (the decision's outbox row notifies at commit).
"""

from __future__ import annotations

import argparse
import asyncio
import os
import statistics
import tempfile
import time
from collections.abc import Sequence

from runtime import Agent, Runtime, ScriptedModel, tool, tool_call
from runtime.runs.wakeups import Wakeups
from store import ApprovalState, Message, Store, open_store

resumed_at: dict[str, float] = {}
everyone: dict[int, asyncio.Event] = {}
"""The round's expected count -> set when that many runs have resumed."""


@tool(description="Pay out.", effect="irreversible")
async def pay(amount: int) -> dict[str, int]:
    return {"paid": amount}


def policy(messages: Sequence[Message]) -> object:
    if messages[-1].role == "tool":
        task = next(m.content for m in messages if m.role == "user")
        resumed_at.setdefault(task, time.perf_counter())
        for count, event in everyone.items():
            if len(resumed_at) >= count:
                event.set()
        return "paid"
    return tool_call("pay", {"amount": 10})


AGENT = Agent("payer", model=ScriptedModel(policy), tools=[pay])


async def fresh(url: str, directory: str, number: int) -> str:
    """A URL naming an empty database for this round."""
    if url.startswith("sqlite"):
        return f"sqlite:///{os.path.join(directory, f'resume-{number}.db')}"
    import asyncpg

    schema = f"resume_bench_{os.getpid()}_{number}"
    conn = await asyncpg.connect(url)
    try:
        await conn.execute(f"DROP SCHEMA IF EXISTS {schema} CASCADE; CREATE SCHEMA {schema}")
    finally:
        await conn.close()
    return f"{url}{'&' if '?' in url else '?'}search_path={schema}"


async def drop(url: str) -> None:
    if url.startswith("sqlite"):
        return
    import asyncpg

    base, _, schema = url.rpartition("search_path=")
    conn = await asyncpg.connect(base.rstrip("?&"))
    try:
        await conn.execute(f"DROP SCHEMA IF EXISTS {schema} CASCADE")
    finally:
        await conn.close()


async def one_round(url: str, runs: int, poll: float, capacity: int) -> list[float]:
    resumed_at.clear()
    everyone.clear()
    everyone[runs] = asyncio.Event()
    store = await open_store(url)
    worker = Runtime(store, [AGENT], worker_id="worker")
    for i in range(runs):  # parked before the queue runs: each waits on its approval
        await worker.start("payer", f"task {i}", run_id=f"r{i}", requested_by="U0REQ")
    queue = worker.serve_queue(capacity=capacity, poll=poll)
    await worker.recover_into_queue()
    deciders: Store | None = None
    wakeups = None
    if url.startswith("sqlite"):
        decider = worker
    else:  # another process, as the database sees it: the worker hears only the NOTIFY
        wakeups = Wakeups(worker, queue=queue)
        if not await wakeups.start():
            raise SystemExit("the worker could not LISTEN")
        deciders = await open_store(url)
        decider = Runtime(deciders, [AGENT], worker_id="decider")
    pending = await decider.approvals(state=ApprovalState.PENDING)
    if len(pending) != runs:
        raise SystemExit("every run must park on its approval")
    tasks = {a.id: (await decider.get(a.run_id or "")).task for a in pending}

    async def click(approval_id: str) -> float:
        started = time.perf_counter()
        approval = await decider.decide(approval_id, "approved", by="U0BOSS", resume=False)
        await decider.after_decision(approval, resume=decider is worker)
        return started

    started = await asyncio.gather(*(click(a.id) for a in pending))
    await asyncio.wait_for(everyone[runs].wait(), poll + 60)
    latencies = [resumed_at[tasks[a.id]] - t for a, t in zip(pending, started, strict=True)]
    if wakeups is not None:
        await wakeups.stop()
    await queue.stop()
    await store.close()
    if deciders is not None:
        await deciders.close()
    return sorted(latencies)


def p99(values: list[float]) -> float:
    return values[max(0, int(len(values) * 0.99) - 1)]


async def main() -> None:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--runs", type=int, default=200)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--poll", type=float, default=10.0, help="the queue's poll, seconds")
    parser.add_argument("--capacity", type=int, default=32, help="runs the worker drives at once")
    parser.add_argument("--url", default="sqlite", help="postgresql://... (default: SQLite)")
    args = parser.parse_args()
    backend = "sqlite" if args.url.startswith("sqlite") else "postgres"
    print(
        f"{backend}: {args.runs} decisions at once, decide -> next model call, ms "
        f"(capacity {args.capacity}, load average {os.getloadavg()[0]:.1f})"
    )
    print(f"{'round':>5} {'p50':>8} {'p99':>8} {'max':>8}")
    p99s = []
    with tempfile.TemporaryDirectory() as directory:
        for number in range(args.rounds):
            url = await fresh(args.url, directory, number)
            try:
                found = await one_round(url, args.runs, args.poll, args.capacity)
            finally:
                await drop(url)
            p99s.append(p99(found))
            print(
                f"{number + 1:>5} {statistics.median(found) * 1000:>8.1f} "
                f"{p99(found) * 1000:>8.1f} {found[-1] * 1000:>8.1f}"
            )
    print(
        f"p99, median of rounds: {statistics.median(p99s) * 1000:.1f} ms (target <= 500); "
        f"without a wake a decision waits for the poll: up to {args.poll * 1000:,.0f} ms "
        f"(load average {os.getloadavg()[0]:.1f})"
    )


if __name__ == "__main__":
    asyncio.run(main())
