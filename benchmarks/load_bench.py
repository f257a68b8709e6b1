"""Loading a state, against reading and parsing the raw rows in the same run.

    python benchmarks/load_bench.py [--rounds 7] [--steps 200]

One run of `--steps` read steps is written through the engine (a ~300-byte reply with one
tool call, a ~500-byte result per step). Then, interleaved within each round, medians over
rounds of the median of 20 calls each:

- `load latest`: `store.load_state(run)` against the reference `raw rows`: the run's
  `messages` column read with stdlib sqlite3 (no thread hop) and parsed with the store's
  pydantic adapter in one `validate_json` call: the least a load can do.
- `state at step 3`: `store.load_state(run, step=3)`, against an absolute 0.3 ms target
  (issue 17) and the raw rows of those steps read and parsed the same way; and
  `rt.state_at(run, 3)`, which reads the run first.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import sqlite3
import statistics
import tempfile
import time
from collections.abc import Awaitable
from collections.abc import Callable

import runtime_bench

from runtime import Runtime
from store import open_store
from store.records import MESSAGES

CALLS = 20


async def median_ms(work: Callable[[], Awaitable[object]]) -> float:
    times = []
    for _ in range(CALLS):
        started = time.perf_counter()
        await work()
        times.append(time.perf_counter() - started)
    return statistics.median(times) * 1000


async def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=7)
    parser.add_argument("--steps", type=int, default=200)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as directory:
        path = os.path.join(directory, "load.db")
        store = await open_store(f"sqlite:///{path}")
        agent = runtime_bench.agent_for(args.steps - 1, runtime_bench.lookup)
        rt = Runtime(store, [agent], worker_id="bench")
        await rt.start(agent.name, "benchmark", run_id="bench")
        raw = sqlite3.connect(path)

        async def raw_rows(last_seq: int | None) -> object:
            sql = "SELECT messages FROM checkpoints WHERE run_id = ? AND seq <= ? ORDER BY seq"
            found = raw.execute(sql, ("bench", last_seq or 1 << 62)).fetchall()
            inner = [row[0][1:-1] for row in found if row[0] != "[]"]
            return MESSAGES.validate_json(f"[{','.join(inner)}]")

        seq_3 = (await store.load_state("bench", step=3)).seq
        work: dict[str, Callable[[], Awaitable[object]]] = {
            "load latest": lambda: store.load_state("bench"),
            "raw rows, all": lambda: raw_rows(None),
            "state at step 3": lambda: store.load_state("bench", step=3),
            "rt.state_at(run, 3)": lambda: rt.state_at("bench", 3),
            "raw rows to step 3": lambda: raw_rows(seq_3),
        }
        results: dict[str, list[float]] = {name: [] for name in work}
        for _ in range(args.rounds):
            for name, call in work.items():
                results[name].append(await median_ms(call))
        raw.close()
        await store.close()
    median = {name: statistics.median(times) for name, times in results.items()}
    ratio = statistics.median(
        a / b for a, b in zip(results["load latest"], results["raw rows, all"], strict=True)
    )
    print(f"a run of {args.steps} steps, medians of {args.rounds} interleaved rounds")
    print(f"{'':>20} {'ms':>8}   reference")
    print(
        f"{'load latest':>20} {median['load latest']:>8.3f}   "
        f"raw rows {median['raw rows, all']:.3f} ms; ratio {ratio:.2f} (target <= 1.2)"
    )
    print(
        f"{'state at step 3':>20} {median['state at step 3']:>8.3f}   "
        f"raw rows {median['raw rows to step 3']:.3f} ms; target <= 0.3 ms"
    )
    print(
        f"{'rt.state_at(run, 3)':>20} {median['rt.state_at(run, 3)']:>8.3f}   "
        "the same through the runtime (it reads the run first); target <= 0.3 ms"
    )


if __name__ == "__main__":
    asyncio.run(main())
