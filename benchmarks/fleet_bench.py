"""`signoff serve` workers on one PostgreSQL database: how throughput grows with workers.

    python benchmarks/fleet_bench.py [--workers 1 2 4 8] [--runs 100] [--steps 40]
        [--rounds 3] [--capacity 32] [--statements] [--url postgresql://...]

For each worker count, in each round (the counts interleaved, so a change in the machine's
load falls on all of them): a fresh schema, that many `signoff serve` processes (API only,
serving the runtime benchmark's read-step agent, `fleet_agent.py`), and `--runs` runs started
round-robin at their APIs (`POST /v1/runs`). Nothing routes a run to the process that
received it: the run queue hands each to whichever worker has room (`--capacity` runs at
once, `SIGNOFF_WORKER_CAPACITY`). The clock runs from the first request to the moment every
run is done (polled in the database every 50 ms).

Beside steps/s it prints the CPU a step cost in the workers (`/proc/<pid>/stat` of every
`signoff serve`) and in PostgreSQL (every `postgres` process on this machine: run it on an
otherwise quiet machine), and the ceiling the cores allow at one worker's cost per step,
`cores / (worker + server CPU per step)`: no number of workers can pass it on these cores.

`--profile FILE`: where a worker's time goes, sampled with py-spy (`pip install py-spy`; not a
dependency) from the first worker over the last round's timed window, written as collapsed
stacks to FILE; the top frames by their own samples are printed.

`--statements`: where the server's time goes, from `pg_stat_statements` (reset before each
timed window; the extension must be in `shared_preload_libraries` and created in the
database), the top statements of the last round at each worker count.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import shutil
import signal
import socket
import statistics
import subprocess
import sys
import tempfile
import time
import urllib.request
from collections.abc import Iterator
from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

import asyncpg
from pg_cost import TICKS
from pg_cost import postgres_cpu_seconds
from postgres_bench import DEFAULT_URL
from postgres_bench import Schema

HERE = Path(__file__).parent
TOKEN = "fleet-bench-token"
UP_WITHIN = 60.0
DONE_WITHIN = 600.0
POLL = 0.05
STATEMENTS_SHOWN = 10


@dataclass(frozen=True)
class Measured:
    steps_per_s: float
    worker_cpu_ms: float
    server_cpu_ms: float
    statements: list[asyncpg.Record]


class Worker:
    """One `signoff serve` process and its API."""

    def __init__(self, name: str, env: dict[str, str], logs: Path) -> None:
        self.port = _free_port()
        env = env | {"SIGNOFF_WORKER_ID": name, "SIGNOFF_PORT": str(self.port)}
        self.log = logs / f"{name}.log"
        with self.log.open("wb") as log:
            self.process = subprocess.Popen(
                [_signoff(), "serve"], env=env, cwd=logs, stdout=log, stderr=subprocess.STDOUT
            )

    def wait_up(self) -> None:
        deadline = time.monotonic() + UP_WITHIN
        while time.monotonic() < deadline:
            if self.process.poll() is not None:
                raise SystemExit(f"a worker exited: {self.log.read_text()[-2000:]}")
            try:
                with urllib.request.urlopen(f"http://127.0.0.1:{self.port}/healthz", timeout=2):
                    return
            except OSError:
                time.sleep(0.05)
        raise SystemExit(f"a worker was not up in {UP_WITHIN:.0f} s")

    def start_run(self, agent: str, run_id: str) -> None:
        body = json.dumps({"agent": agent, "task": f"task {run_id}", "run_id": run_id})
        request = urllib.request.Request(
            f"http://127.0.0.1:{self.port}/v1/runs", data=body.encode(), method="POST"
        )
        request.add_header("Authorization", f"Bearer {TOKEN}")
        request.add_header("Content-Type", "application/json")
        with urllib.request.urlopen(request, timeout=30) as response:
            if response.status != 201:
                raise SystemExit(f"POST /v1/runs answered {response.status}")

    def cpu_seconds(self) -> float:
        fields = Path(f"/proc/{self.process.pid}/stat").read_text().rsplit(")", 1)[1].split()
        return (int(fields[11]) + int(fields[12])) / TICKS  # utime, stime

    def stop(self) -> None:
        if self.process.poll() is None:
            self.process.send_signal(signal.SIGTERM)
            try:
                self.process.wait(timeout=15)
            except subprocess.TimeoutExpired:
                self.process.kill()
        self.process.wait()


def _signoff() -> str:
    found = shutil.which("signoff", path=str(Path(sys.executable).parent)) or shutil.which(
        "signoff"
    )
    if found is None:
        raise SystemExit("no `signoff` command: pip install -e . first")
    return found


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def _environment(url: str, steps: int, capacity: int, pool: int | None) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("SIGNOFF_", "SLACK_"))}
    return (
        env
        | {
            "SIGNOFF_DATABASE_URL": url,
            "SIGNOFF_API_ONLY": "true",
            "SIGNOFF_API_TOKEN": TOKEN,
            "SIGNOFF_API_RATE_PER_MINUTE": "100000",
            "SIGNOFF_HOST": "127.0.0.1",
            "SIGNOFF_AGENTS": "fleet_agent:agent",
            "SIGNOFF_BENCH_STEPS": str(steps),
            "SIGNOFF_WORKER_CAPACITY": str(capacity),
            "PYTHONPATH": os.pathsep.join([str(HERE), env.get("PYTHONPATH", "")]),
        }
        | ({"SIGNOFF_DATABASE_POOL_SIZE": str(pool)} if pool else {})
    )


@contextmanager
def fleet(count: int, env: dict[str, str]) -> Iterator[list[Worker]]:
    with tempfile.TemporaryDirectory(prefix="signoff-fleet-") as logs:
        workers = [Worker(f"worker-{i}", env, Path(logs)) for i in range(count)]
        try:
            for worker in workers:
                worker.wait_up()
            yield workers
        finally:
            for worker in workers:
                worker.stop()


async def _wait_done(url: str, prefix: str, runs: int) -> None:
    conn = await asyncpg.connect(url)
    try:
        deadline = time.monotonic() + DONE_WITHIN
        while time.monotonic() < deadline:
            done, failed = await conn.fetchrow(
                "SELECT count(*) FILTER (WHERE status = 'done'),"
                " count(*) FILTER (WHERE status IN ('failed', 'cancelled'))"
                " FROM runs WHERE id LIKE $1",
                f"{prefix}%",
            )
            if failed:
                raise SystemExit(f"{failed} run(s) failed: see the workers' logs")
            if done == runs:
                return
            await asyncio.sleep(POLL)
        raise SystemExit(f"the runs were not done in {DONE_WITHIN:.0f} s")
    finally:
        await conn.close()


def _start_all(workers: Sequence[Worker], agent: str, ids: Sequence[str]) -> None:
    with ThreadPoolExecutor(max_workers=8) as pool:
        list(
            pool.map(lambda i: workers[i % len(workers)].start_run(agent, ids[i]), range(len(ids)))
        )


async def _statements(url: str, reset: bool) -> list[asyncpg.Record]:
    conn = await asyncpg.connect(url)
    try:
        if reset:
            await conn.execute("SELECT public.pg_stat_statements_reset()")
            return []
        return list(
            await conn.fetch(
                "SELECT calls, total_exec_time, mean_exec_time, left(regexp_replace(query,"
                " '\\s+', ' ', 'g'), 90) AS query FROM public.pg_stat_statements"
                " WHERE dbid = (SELECT oid FROM pg_database WHERE datname = current_database())"
                " ORDER BY total_exec_time DESC LIMIT $1",
                STATEMENTS_SHOWN,
            )
        )
    finally:
        await conn.close()


def _py_spy(worker: Worker, output: str) -> subprocess.Popen[bytes]:
    argv = ["py-spy", "record", "-p", str(worker.process.pid), "-r", "250", "-f", "raw"]
    spy = subprocess.Popen([*argv, "-o", output, "--nonblocking"], stdout=subprocess.DEVNULL)
    time.sleep(1.0)  # attached before the clock starts
    return spy


def _top_frames(path: str, shown: int = 15) -> list[tuple[float, str]]:
    """The frames with the most samples of their own, as shares of all samples."""
    own: dict[str, int] = {}
    for line in Path(path).read_text().splitlines():
        stack, _, count = line.rpartition(" ")
        frame = stack.rsplit(";", 1)[-1]
        own[frame] = own.get(frame, 0) + int(count)
    total = sum(own.values()) or 1
    ranked = sorted(own.items(), key=lambda item: -item[1])[:shown]
    return [(count / total, frame) for frame, count in ranked]


async def measure(args: argparse.Namespace, count: int, profile: bool = False) -> Measured:
    agent = f"bench-lookup-{args.steps}"
    async with Schema(args.url) as url:
        with fleet(count, _environment(url, args.steps, args.capacity, args.pool)) as workers:
            warm = [f"warm-{i}" for i in range(count)]
            _start_all(workers, agent, warm)
            await _wait_done(url, "warm-", len(warm))
            ids = [f"run-{i}" for i in range(args.runs)]
            if args.statements:
                await _statements(url, reset=True)
            spy = _py_spy(workers[0], args.profile) if profile else None
            cpu = sum(w.cpu_seconds() for w in workers)
            server, started = postgres_cpu_seconds(), time.perf_counter()
            await asyncio.to_thread(_start_all, workers, agent, ids)
            await _wait_done(url, "run-", args.runs)
            elapsed = time.perf_counter() - started
            if spy is not None:
                spy.send_signal(signal.SIGINT)
                spy.wait(timeout=60)
            server = postgres_cpu_seconds() - server
            cpu = sum(w.cpu_seconds() for w in workers) - cpu
            top = await _statements(url, reset=False) if args.statements else []
    steps = args.runs * (args.steps + 1)
    return Measured(steps / elapsed, cpu / steps * 1000, server / steps * 1000, top)


def _median(rounds: list[Measured], field: str) -> float:
    return statistics.median(getattr(m, field) for m in rounds)


async def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--workers", type=int, nargs="+", default=[1, 2, 4, 8])
    parser.add_argument("--runs", type=int, default=100)
    parser.add_argument("--steps", type=int, default=40)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--capacity", type=int, default=32)
    parser.add_argument("--pool", type=int, default=None, help="connections per worker")
    parser.add_argument("--statements", action="store_true")
    parser.add_argument("--profile", metavar="FILE", help="py-spy one worker (one worker's run)")
    parser.add_argument("--url", default=DEFAULT_URL)
    args = parser.parse_args()
    counts = sorted(set(args.workers))
    if counts[0] != 1:
        counts.insert(0, 1)  # every ratio is against one worker
    measured: dict[int, list[Measured]] = {count: [] for count in counts}
    for last in [False] * (args.rounds - 1) + [True]:
        for count in counts:
            profile = last and count == 1 and args.profile is not None
            measured[count].append(await measure(args, count, profile))
    _report(args, measured)


def _report(args: argparse.Namespace, measured: dict[int, list[Measured]]) -> None:
    one = measured[1]
    cores = os.cpu_count() or 1
    per_step = (_median(one, "worker_cpu_ms") + _median(one, "server_cpu_ms")) / 1000
    ceiling = cores / per_step
    print(
        f"{args.runs} runs x {args.steps} read steps through `signoff serve` workers"
        f" (capacity {args.capacity} each), medians of {args.rounds} interleaved"
        f" round{'s' if args.rounds > 1 else ''}"
    )
    print(
        f"one worker's CPU per step, its own and PostgreSQL's: {per_step * 1000:.3f} ms"
        f" -> ceiling on {cores} cores {ceiling:,.0f} steps/s"
    )
    print(
        f"{'workers':>7} {'steps/s':>8} {'x one':>6} {'x ceiling':>9}"
        f" {'worker ms/step':>14} {'postgres ms/step':>16}"
    )
    base = _median(one, "steps_per_s")
    for count, rounds in measured.items():
        rate = _median(rounds, "steps_per_s")
        print(
            f"{count:>7} {rate:>8,.0f} {rate / base:>6.2f} {rate / ceiling:>9.2f}"
            f" {_median(rounds, 'worker_cpu_ms'):>14.3f} {_median(rounds, 'server_cpu_ms'):>16.3f}"
        )
    if args.profile:
        print("\none worker, last round: py-spy's top frames by own samples")
        for share, frame in _top_frames(args.profile):
            print(f"  {share:>6.1%}  {frame}")
    if args.statements:
        for count, rounds in measured.items():
            print(f"\ntop statements, {count} worker(s), last round (ms total, calls, ms mean):")
            for row in rounds[-1].statements:
                print(
                    f"  {row['total_exec_time']:>9.1f} {row['calls']:>7} "
                    f"{row['mean_exec_time']:>7.3f}  {row['query']}"
                )


if __name__ == "__main__":
    asyncio.run(main())
