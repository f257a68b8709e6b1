"""Runtime benchmark: what durability costs per agent step, against the raw SQLite floor.

    python benchmarks/runtime_bench.py [--runs 100] [--concurrent-steps 40]

Workload per step: an assistant reply with ~300 bytes of text and one tool call with ~100
bytes of arguments, and a ~500-byte tool result. The tool is a mutating one (irreversible,
no approval), so every step writes the checkpoint and the `started` effect in one
transaction and the result with its tool message in a second, as DESIGN rule 1 requires.

The floor, measured in the same process on the same disk: stdlib sqlite3, WAL,
synchronous=FULL, one INSERT + COMMIT per step holding only that step's new messages.

It prints, for 40- and 200-step runs: ms per step (Signoff and floor, and their ratio),
database bytes per step, load-latest latency; then the throughput of N concurrent runs.
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

from runtime import Agent, Budget, Runtime, ScriptedModel, tool, tool_call
from store import Message, open_store

TEXT = "t" * 300
RESULT = {"rows": "r" * 480}


@tool(description="Write a record.", effect="irreversible", requires_approval=False)
async def record(key: str, payload: str) -> dict[str, str]:
    return RESULT


def policy_for(steps: int):
    def policy(messages: Sequence[Message]) -> object:
        turn = (len(messages) - 1) // 2  # a user task, then an assistant reply + a tool result
        if turn >= steps:
            return "done"
        from runtime import Reply

        call = tool_call("record", {"key": f"k{turn}", "payload": "p" * 80})
        return Reply(content=f"step {turn} {TEXT}", tool_calls=(call,))

    return policy


def agent_for(steps: int) -> Agent:
    return Agent(
        f"bench-{steps}",
        model=ScriptedModel(policy_for(steps)),
        tools=[record],
        budget=Budget(max_steps=steps + 1),
    )


def floor_ms_per_step(directory: str, steps: int) -> float:
    """The raw floor: one INSERT + COMMIT per step with that step's new messages."""
    path = os.path.join(directory, f"floor-{steps}.db")
    conn = sqlite3.connect(path, isolation_level=None)
    conn.execute("PRAGMA journal_mode = WAL")
    conn.execute("PRAGMA synchronous = FULL")
    conn.execute(
        "CREATE TABLE steps (run_id TEXT, seq INTEGER, messages TEXT, PRIMARY KEY (run_id, seq))"
    )
    started = time.perf_counter()
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
    elapsed = time.perf_counter() - started
    conn.close()
    return elapsed / steps * 1000


def file_bytes(path: str) -> int:
    conn = sqlite3.connect(path)
    conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    conn.close()
    return os.path.getsize(path)


async def signoff_run(directory: str, steps: int) -> dict[str, float]:
    path = os.path.join(directory, f"signoff-{steps}.db")
    store = await open_store(f"sqlite:///{path}")
    agent = agent_for(steps)
    rt = Runtime(store, [agent], worker_id="bench")
    await rt.start(agent.name, "warm up", run_id="warm-up")
    before = file_bytes(path)
    started = time.perf_counter()
    await rt.start(agent.name, "benchmark", run_id="bench")
    elapsed = time.perf_counter() - started
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
        "bytes_per_step": grown / steps,
        "load_latest_ms": statistics.median(loads) * 1000,
    }


async def concurrent(directory: str, runs: int, steps: int) -> float:
    """Step-checkpoints per second with `runs` runs of `steps` steps driven at once."""
    store = await open_store(f"sqlite:///{os.path.join(directory, 'concurrent.db')}")
    agent = agent_for(steps)
    rt = Runtime(store, [agent], worker_id="bench")
    await rt.start(agent.name, "warm up", run_id="warm-up")
    started = time.perf_counter()
    await asyncio.gather(*(rt.start(agent.name, f"task {i}", run_id=f"r{i}") for i in range(runs)))
    elapsed = time.perf_counter() - started
    done = await rt.list("done", limit=runs + 1)
    assert len(done) == runs + 1, "every run must finish"
    await store.close()
    return runs * (steps + 1) / elapsed


async def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=100)
    parser.add_argument("--concurrent-steps", type=int, default=40)
    parser.add_argument("--dir", default=None, help="where to put the database files")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(dir=args.dir) as directory:
        print(
            f"{'steps':>5} {'signoff ms/step':>16} {'floor ms/step':>14} {'ratio':>6} "
            f"{'bytes/step':>11} {'load latest ms':>15}"
        )
        for steps in (40, 200):
            floor = floor_ms_per_step(directory, steps)
            r = await signoff_run(directory, steps)
            print(
                f"{steps:>5} {r['ms_per_step']:>16.3f} {floor:>14.3f} "
                f"{r['ms_per_step'] / floor:>6.2f} {r['bytes_per_step']:>11.0f} "
                f"{r['load_latest_ms']:>15.3f}"
            )
        floor_rate = 1000 / floor_ms_per_step(directory, 400)
        rate = await concurrent(directory, args.runs, args.concurrent_steps)
        print(
            f"{args.runs} concurrent runs x {args.concurrent_steps} steps: "
            f"{rate:,.0f} step-checkpoints/s (raw one-commit-per-step floor: "
            f"{floor_rate:,.0f}/s)"
        )


if __name__ == "__main__":
    asyncio.run(main())
