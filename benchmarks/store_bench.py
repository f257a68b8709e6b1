"""Store benchmark: checkpoint latency, storage per step, and load latency.

    python benchmarks/store_bench.py

For a 40-step and a 200-step run, each step appending about 1 KB of messages (one assistant
message with a tool call, one tool result), on a fresh SQLite file with synchronous=FULL:
the median ms per checkpoint append, database bytes per step (file growth after a WAL
checkpoint, divided by steps), and the median latency of loading the latest state and the
state at step 3.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import sqlite3
import statistics
import tempfile
import time

from store import Batch
from store import Checkpoint
from store import Message
from store import RunStatus
from store import ToolCall
from store import Usage
from store import open_store
from store.records import Run


def step_messages(step: int) -> tuple[Message, ...]:
    call = ToolCall(id=f"call_{step}", name="lookup", arguments={"query": f"q{step}" + "a" * 90})
    return (
        Message(role="assistant", content=f"step {step} " + "t" * 300, tool_calls=(call,)),
        Message(role="tool", tool_call_id=call.id, content="r" * 500),
    )


def file_bytes(path: str) -> int:
    conn = sqlite3.connect(path)
    conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    conn.close()
    return os.path.getsize(path)


async def measure(steps: int, directory: str) -> dict[str, float]:
    path = os.path.join(directory, f"bench-{steps}.db")
    store = await open_store(f"sqlite:///{path}")
    run_id = f"run-{steps}"
    first = Checkpoint.opening(
        run_id, (Message(role="system", content="You help."), Message(role="user", content="go"))
    )
    await store.create_run(Run(id=run_id, agent="bench", task="go", lineage_id=run_id), first)
    before = file_bytes(path)
    latencies = []
    for step in range(1, steps + 1):
        cp = Checkpoint(
            run_id=run_id,
            seq=step,
            step=step,
            status=RunStatus.RUNNING,
            usage=Usage(steps=step, input_tokens=step * 100, output_tokens=step * 20),
            messages=step_messages(step),
        )
        started = time.perf_counter()
        await store.commit(Batch(run_id=run_id, checkpoints=[cp]))
        latencies.append(time.perf_counter() - started)
    grown = file_bytes(path) - before
    latest = await _median_latency(lambda: store.load_state(run_id))
    at_three = await _median_latency(lambda: store.load_state(run_id, step=3))
    await store.close()
    return {
        "ms_per_checkpoint": statistics.median(latencies) * 1000,
        "bytes_per_step": grown / steps,
        "load_latest_ms": latest * 1000,
        "load_step3_ms": at_three * 1000,
    }


async def _median_latency(load, repeat: int = 50) -> float:
    samples = []
    for _ in range(repeat):
        started = time.perf_counter()
        await load()
        samples.append(time.perf_counter() - started)
    return statistics.median(samples)


async def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--dir", default=None, help="where to put the database files")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(dir=args.dir) as directory:
        results = {steps: await measure(steps, directory) for steps in (40, 200)}
    print(
        f"{'steps':>5} {'ms/checkpoint':>14} {'bytes/step':>11} {'load latest ms':>15} "
        f"{'load step 3 ms':>15}"
    )
    for steps, r in results.items():
        print(
            f"{steps:>5} {r['ms_per_checkpoint']:>14.3f} {r['bytes_per_step']:>11.0f} "
            f"{r['load_latest_ms']:>15.3f} {r['load_step3_ms']:>15.3f}"
        )
    ratio = results[200]["bytes_per_step"] / results[40]["bytes_per_step"]
    print(f"bytes/step at 200 steps / at 40 steps: {ratio:.2f} (target <= 1.3)")


if __name__ == "__main__":
    asyncio.run(main())
