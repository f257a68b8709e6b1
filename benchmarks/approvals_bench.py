"""Approvals benchmark: decide -> resume latency, and re-arming 100,000 pending approvals.

    python benchmarks/approvals_bench.py [--runs 300] [--pending 100000]

1. `--runs` parked runs, each waiting on one approval. For each, the time from calling
   `Runtime.decide(..., "approved")` to the moment the resumed run's model is called again
   (the decision committed, the run's lease taken, its state loaded, the approved tool
   executed and recorded): median and p99.
2. `--pending` approvals pending in the store when a new process starts: how long
   `ApprovalScheduler.start()` takes to re-arm from the store (it also fires what is overdue:
   1% of them here, expired at once), and how much memory the process gained doing so.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import resource
import statistics
import tempfile
import time
import tracemalloc
from collections.abc import Sequence
from datetime import timedelta

from runtime import Agent
from runtime import Policies
from runtime import Policy
from runtime import Runtime
from runtime import ScriptedModel
from runtime import tool
from runtime import tool_call
from store import Approval
from store import ApprovalState
from store import Message
from store import open_store
from store.records import utcnow

resumed_at: dict[str, float] = {}


@tool(description="Pay out.", effect="irreversible")
async def pay(amount: int) -> dict[str, int]:
    return {"paid": amount}


def policy(messages: Sequence[Message]) -> object:
    if messages[-1].role == "tool":
        task = next(m.content for m in messages if m.role == "user")
        resumed_at.setdefault(task, time.perf_counter())
        return "paid"
    return tool_call("pay", {"amount": 10})


async def decide_latency(directory: str, runs: int) -> tuple[float, float]:
    store = await open_store(f"sqlite:///{os.path.join(directory, 'decide.db')}")
    agent = Agent("payer", model=ScriptedModel(policy), tools=[pay])
    rt = Runtime(store, [agent], worker_id="bench")
    for i in range(runs):
        await rt.start("payer", f"task {i}", run_id=f"r{i}", requested_by="U0REQ")
    pending = await rt.approvals(state=ApprovalState.PENDING)
    assert len(pending) == runs, "every run must park on its approval"
    latencies = []
    for approval in pending:
        run = await rt.get(approval.run_id or "")
        started = time.perf_counter()
        await rt.decide(approval.id, "approved", by="U0BOSS")
        latencies.append(resumed_at[run.task] - started)
    await store.close()
    latencies.sort()
    return statistics.median(latencies), latencies[int(len(latencies) * 0.99) - 1]


async def fill(url: str, count: int) -> None:
    store = await open_store(url)
    now = utcnow()
    chunk = 2000
    for start in range(0, count, chunk):
        batch = [
            Approval(
                id=f"ap{i}",
                tool="pay",
                args={"amount": i},
                deadline=now + timedelta(hours=1 + i % 48)
                if i % 100
                else now - timedelta(minutes=5),
                next_reminder_at=now + timedelta(minutes=30 + i % 600),
                created_at=now,
            )
            for i in range(start, min(start + chunk, count))
        ]
        await asyncio.gather(*(store.create_approval(a) for a in batch))
    await store.close()


async def rearm(directory: str, pending: int) -> dict[str, float]:
    url = f"sqlite:///{os.path.join(directory, 'pending.db')}"
    await fill(url, pending)
    rss_before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    tracemalloc.start()
    store = await open_store(url)
    policies = Policies(default=Policy(timeout=timedelta(hours=48)))
    rt = Runtime(store, [], policies=policies, worker_id="bench")
    started = time.perf_counter()
    await store.next_due_at()
    lookup = time.perf_counter() - started
    scheduler = rt.scheduler
    started = time.perf_counter()
    await scheduler.start()
    elapsed = time.perf_counter() - started
    _, peak = tracemalloc.get_traced_memory()
    tracemalloc.stop()
    expired = len(await store.list_approvals(state=ApprovalState.DECLINED, limit=pending))
    armed = scheduler.armed_at
    await scheduler.stop()
    await store.close()
    rss_after = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    return {
        "seconds": elapsed,
        "next_due_ms": lookup * 1000,
        "expired": expired,
        "python_peak_mb": peak / 2**20,
        "rss_growth_mb": (rss_after - rss_before) / 1024,
        "armed": armed is not None,
    }


async def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=300)
    parser.add_argument("--pending", type=int, default=100_000)
    parser.add_argument("--dir", default=None, help="where to put the database files")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(dir=args.dir) as directory:
        median, p99 = await decide_latency(directory, args.runs)
        print(
            f"decide -> resumed model call, {args.runs} parked runs: "
            f"median {median * 1000:.2f} ms, p99 {p99 * 1000:.2f} ms"
        )
        r = await rearm(directory, args.pending)
        print(
            f"re-arm with {args.pending:,} pending approvals: the next due time found in "
            f"{r['next_due_ms']:.2f} ms; ApprovalScheduler.start() {r['seconds'] * 1000:.0f} ms "
            f"including expiring the {r['expired']:,} that fell due while down; python heap "
            f"peak {r['python_peak_mb']:.1f} MB, RSS growth {r['rss_growth_mb']:.1f} MB"
        )


if __name__ == "__main__":
    asyncio.run(main())
