"""CLI benchmark: how long a `signoff` command takes, from exec to exit.

    python benchmarks/cli_bench.py [--rounds 21] [--runs 20]

Each round runs, one after the other, `python -c pass` (the floor: starting the interpreter
this venv uses), `signoff --help` and `signoff runs list` on a database holding `--runs`
runs, so whatever the machine drifts by touches all three alike. Prints the median wall
time of each and how far the commands sit above the floor.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from examples.refund_agent import agent as refund_agent
from runtime import Runtime
from store import open_store

SIGNOFF = str(Path(sys.executable).with_name("signoff"))


async def fill(url: str, runs: int) -> None:
    """`runs` runs of the refund agent, created (not driven: no world is touched)."""
    store = await open_store(url)
    try:
        rt = Runtime(store, [refund_agent], worker_id="cli-bench")
        for i in range(runs):
            await rt.create("refund-agent", f"Refund order {4000 + i}", run_id=f"bench-{i}")
    finally:
        await store.close()


def wall(command: list[str], env: dict[str, str], cwd: str) -> float:
    started = time.perf_counter()
    done = subprocess.run(command, env=env, cwd=cwd, capture_output=True, check=False)
    elapsed = time.perf_counter() - started
    if done.returncode != 0:
        raise SystemExit(f"{' '.join(command)} failed: {done.stderr.decode()[-500:]}")
    return elapsed


def main() -> None:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--rounds", type=int, default=21)
    parser.add_argument("--runs", type=int, default=20)
    options = parser.parse_args()
    commands = {
        "python -c pass": [sys.executable, "-c", "pass"],
        "signoff --help": [SIGNOFF, "--help"],
        "signoff runs list": [SIGNOFF, "runs", "list"],
    }
    with tempfile.TemporaryDirectory() as home:
        url = f"sqlite:///{home}/signoff.db"
        asyncio.run(fill(url, options.runs))
        env = {k: v for k, v in os.environ.items() if not k.startswith(("SIGNOFF_", "SLACK_"))}
        env["SIGNOFF_DATABASE_URL"] = url
        times: dict[str, list[float]] = {name: [] for name in commands}
        for _ in range(options.rounds):
            for name, command in commands.items():
                times[name].append(wall(command, env, home))
    floor = statistics.median(times["python -c pass"])
    print(f"wall time, median of {options.rounds} interleaved rounds ({options.runs} runs listed):")
    for name, measured in times.items():
        median = statistics.median(measured)
        above = "" if measured is times["python -c pass"] else f"  (+{median - floor:.3f} s)"
        print(f"  {name:<18} {median:.3f} s{above}")


if __name__ == "__main__":
    main()
