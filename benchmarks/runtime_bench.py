"""Runtime benchmark: what durability costs per agent step, against the raw SQLite floor.

    python benchmarks/runtime_bench.py [--rounds 5] [--runs 100]

Workload per step: an assistant reply with ~300 bytes of text and one tool call with ~100
bytes of arguments, and a ~500-byte tool result, driven by a scripted model (no network).
Two tools, because the engine treats them differently (docs/architecture.md rule 1):

- `lookup`, a read: its result may ride in the transaction that records the next model
  reply, since a crash in between only re-runs a read. One commit per step.
- `record`, irreversible and not idempotent: its result is committed before the model is
  asked again, since a lost result would leave it in doubt. Two commits per step.

The floor, measured in the same process on the same disk: stdlib sqlite3, WAL,
synchronous=FULL, one INSERT + COMMIT per step holding only that step's new messages.
Disk timings on a shared machine drift, so each round measures the floor and Signoff back to
back and the medians over rounds are printed.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import sqlite3
import statistics
import tempfile
import time
from collections.abc import Sequence
from itertools import count

from runtime import Agent
from runtime import Budget
from runtime import Reply
from runtime import Runtime
from runtime import ScriptedModel
from runtime import Tool
from runtime import tool
from runtime import tool_call
from store import Message
from store import open_store

TEXT = "t" * 300
RESULT = {"rows": "r" * 480}
ids = count()


@tool(description="Look a record up.", effect="read")
async def lookup(key: str, payload: str) -> dict[str, str]:
    return RESULT


@tool(description="Write a record.", effect="irreversible", requires_approval=False)
async def record(key: str, payload: str) -> dict[str, str]:
    return RESULT


def agent_for(steps: int, chosen: Tool) -> Agent:
    def policy(messages: Sequence[Message]) -> object:
        turn = (len(messages) - 1) // 2  # a user task, then an assistant reply + a tool result
        if turn >= steps:
            return "done"
        # with an id, as a provider's call has one (and as the peers' replies do)
        call = tool_call(chosen.name, {"key": f"k{turn}", "payload": "p" * 80}, id=f"c{turn}")
        return Reply(content=f"step {turn} {TEXT}", tool_calls=(call,))

    return Agent(
        f"bench-{chosen.name}-{steps}",
        model=ScriptedModel(policy),
        tools=[chosen],
        budget=Budget(max_steps=steps + 1),
    )


def floor_ms_per_step(directory: str, steps: int) -> float:
    """The raw floor: one INSERT + COMMIT per step with that step's new messages."""
    return floor_costs(directory, steps)[0]


def floor_costs(directory: str, steps: int, path: str | None = None) -> tuple[float, float]:
    """The raw floor's wall and CPU ms per step; the difference is what the disk's fsync
    costs a commit (near zero on a tmpfs, whose fsync writes nothing)."""
    path = path or os.path.join(directory, f"floor-{next(ids)}.db")
    conn = sqlite3.connect(path, isolation_level=None)
    conn.execute("PRAGMA journal_mode = WAL")
    conn.execute("PRAGMA synchronous = FULL")
    conn.execute(
        "CREATE TABLE steps (run_id TEXT, seq INTEGER, messages TEXT, PRIMARY KEY (run_id, seq))"
    )
    started, cpu = time.perf_counter(), time.process_time()
    for seq in range(steps):
        messages = json.dumps(
            [
                {
                    "role": "assistant",
                    "content": f"step {seq} {TEXT}",
                    "tool_calls": [
                        {
                            "id": f"c{seq}",
                            "name": "record",
                            "arguments": {"key": f"k{seq}", "payload": "p" * 80},
                        }
                    ],
                },
                {"role": "tool", "tool_call_id": f"c{seq}", "content": json.dumps(RESULT)},
            ]
        )
        conn.execute("BEGIN")
        conn.execute("INSERT INTO steps VALUES (?, ?, ?)", ("run", seq, messages))
        conn.execute("COMMIT")
    elapsed, cpu = time.perf_counter() - started, time.process_time() - cpu
    conn.close()
    return elapsed / steps * 1000, cpu / steps * 1000


def floor_bytes_per_step(directory: str, steps: int) -> float:
    """The raw floor's database bytes per step (the file after a WAL checkpoint; one step's
    file subtracted, as Signoff's is measured after a warm-up run): what storing only each
    step's new messages takes."""
    one, many = (os.path.join(directory, f"floor-{next(ids)}.db") for _ in range(2))
    floor_costs(directory, 1, one)
    floor_costs(directory, steps + 1, many)
    return (file_bytes(many) - file_bytes(one)) / steps


def file_bytes(path: str) -> int:
    conn = sqlite3.connect(path)
    conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    conn.close()
    return os.path.getsize(path)


async def signoff_run(directory: str, steps: int, chosen: Tool) -> dict[str, float]:
    path = os.path.join(directory, f"signoff-{next(ids)}.db")
    store = await open_store(f"sqlite:///{path}")
    agent = agent_for(steps, chosen)
    rt = Runtime(store, [agent], worker_id="bench")
    await rt.start(agent.name, "warm up", run_id="warm-up")
    before = file_bytes(path)
    started, cpu = time.perf_counter(), time.process_time()
    await rt.start(agent.name, "benchmark", run_id="bench")
    elapsed, cpu = time.perf_counter() - started, time.process_time() - cpu
    run = await rt.get("bench")
    if run.usage.steps != steps + 1 or run.stop_reason != "answered":
        raise SystemExit(f"the benchmark run did not finish as expected: {run}")
    grown = file_bytes(path) - before
    loads = []
    for _ in range(50):
        t = time.perf_counter()
        await store.load_state("bench")
        loads.append(time.perf_counter() - t)
    await store.close()
    return {
        "ms_per_step": elapsed / steps * 1000,
        "cpu_ms_per_step": cpu / steps * 1000,
        "bytes_per_step": grown / steps,
        "load_latest_ms": statistics.median(loads) * 1000,
    }


async def concurrent(directory: str, runs: int, steps: int, chosen: Tool) -> float:
    """Steps per second with `runs` runs of `steps` steps driven at once (each step is
    checkpointed: model reply, started effect, result)."""
    store = await open_store(f"sqlite:///{os.path.join(directory, f'c-{next(ids)}.db')}")
    agent = agent_for(steps, chosen)
    rt = Runtime(store, [agent], worker_id="bench")
    await rt.start(agent.name, "warm up", run_id="warm-up")
    started = time.perf_counter()
    await asyncio.gather(*(rt.start(agent.name, f"task {i}", run_id=f"r{i}") for i in range(runs)))
    elapsed = time.perf_counter() - started
    done = await rt.list("done", limit=runs + 1)
    if len(done) != runs + 1:
        raise SystemExit("every run must finish")
    await store.close()
    return runs * (steps + 1) / elapsed


async def single_runs(directory: str, rounds: int) -> None:
    """Each round measures the floor and Signoff back to back; medians over rounds. `cpu` is
    the engine's CPU per step (the process's, SQLite's included); `fsync` is the floor's wall
    time less its CPU, what the disk adds to a commit."""
    print(
        f"{'tool':>7} {'steps':>5} {'signoff ms/step':>16} {'cpu ms/step':>12} "
        f"{'floor ms/step':>14} {'fsync ms':>9} {'ratio':>6} {'bytes/step':>11} "
        f"{'floor bytes':>11} {'x floor bytes':>13} {'load latest ms':>15}"
    )
    for chosen in (lookup, record):
        for steps in (40, 200):
            floors, results = [], []
            for _ in range(rounds):
                floors.append(floor_costs(directory, steps))
                results.append(await signoff_run(directory, steps, chosen))
            ratio = statistics.median(
                r["ms_per_step"] / f[0] for r, f in zip(results, floors, strict=True)
            )
            stored = statistics.median(r["bytes_per_step"] for r in results)
            floor_bytes = floor_bytes_per_step(directory, steps)
            print(
                f"{chosen.name:>7} {steps:>5} "
                f"{statistics.median(r['ms_per_step'] for r in results):>16.3f} "
                f"{statistics.median(r['cpu_ms_per_step'] for r in results):>12.3f} "
                f"{statistics.median(f[0] for f in floors):>14.3f} "
                f"{statistics.median(f[0] - f[1] for f in floors):>9.3f} {ratio:>6.2f} "
                f"{stored:>11.0f} {floor_bytes:>11.0f} {stored / floor_bytes:>13.2f} "
                f"{statistics.median(r['load_latest_ms'] for r in results):>15.3f}"
            )


async def concurrent_runs(directory: str, args: argparse.Namespace) -> None:
    """Steps/s of `--runs` concurrent runs, each round beside the floor's steps/s (one commit
    per step, 400 steps) measured just before it; medians of the rounds and of the ratios."""
    for chosen in (lookup, record):
        rates, floors = [], []
        for _ in range(max(1, args.rounds // 2)):
            floors.append(floor_costs(directory, 400))
            rates.append(await concurrent(directory, args.runs, args.steps, chosen))
        ratio = statistics.median(r * f[0] / 1000 for r, f in zip(rates, floors, strict=True))
        print(
            f"{args.runs} concurrent runs x {args.steps} steps ({chosen.name}): "
            f"{statistics.median(rates):,.0f} steps/s, {ratio:.2f}x the floor's "
            f"{statistics.median(1000 / f[0] for f in floors):,.0f} "
            f"(fsync {statistics.median(f[0] - f[1] for f in floors):.3f} ms)"
        )


async def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--runs", type=int, default=100)
    parser.add_argument("--steps", type=int, default=40, help="steps per concurrent run")
    parser.add_argument("--dir", default=None, help="where to put the database files")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(dir=args.dir) as directory:
        print(f"database files in {directory}, load average {os.getloadavg()[0]:.1f}")
        await single_runs(directory, args.rounds)
        await concurrent_runs(directory, args)
        await print_reference(directory, args)


async def print_reference(directory: str, args: argparse.Namespace) -> None:
    """The same workloads without the engine: what this machine allows at best."""
    import reference  # the store's own SQL: only this tree's (`ab_bench` runs older ones)

    floor_rate = statistics.median(
        1000 / floor_ms_per_step(directory, 400) for _ in range(args.rounds)
    )
    ledger_rate = statistics.median(
        [await reference.ledger_floor(directory, args.runs, args.steps) for _ in range(3)]
    )
    pydantic_ms, json_ms = reference.parse_floor(200)
    print("this machine, without the engine:")
    print(f"  raw floor, one commit per step: {floor_rate:,.0f} steps/s")
    print(
        f"  the ledger's own statements, {args.runs} runs per transaction: "
        f"{ledger_rate:,.0f} steps/s"
    )
    print(
        f"  parsing a 200-step transcript: {pydantic_ms:.3f} ms into messages, "
        f"{json_ms:.3f} ms into dicts (stdlib json)"
    )


if __name__ == "__main__":
    asyncio.run(main())
