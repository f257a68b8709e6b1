"""A/B benchmark: this tree against an older checkout of it, on one workload, interleaved.

    git worktree add /tmp/old 4c0a36e     # the reference (never committed)
    python benchmarks/ab_bench.py --old /tmp/old [--rounds 7] [--runs 100] [--steps 40]
        [--dir DIR] [--profile DIR]

The workload is the runtime benchmark's (`runtime_bench.py`): `--runs` concurrent runs of
`--steps` read steps each (`lookup`: ~300 bytes of reply text, one tool call, a ~500-byte
result), on a fresh SQLite file (`synchronous=FULL`) in `--dir`, after one warm-up run. Each
tree runs it in a subprocess of its own with only that tree on its import path, so the two
share nothing but the disk and the cores. Each round measures the raw floor (stdlib sqlite3,
one INSERT + COMMIT per step, 400 steps, in this process) and then both trees, the order
alternating between rounds, so whatever the machine drifts by touches both alike.

Printed: per tree the medians of steps/s and of CPU ms per step (the subprocess's process
time over its steps), and the median of each round's this/old ratio with every round's;
beside them the floor's steps/s and fsync ms (its wall time less its CPU time: what the disk
adds to a commit) and the load average. With `--profile DIR`, a last round runs each tree
under py-spy (`--gil`: samples holding the GIL, Python's own work) and prints each one's top
frames by own samples on the event loop (imports left out); the raw profiles are left in DIR.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from collections import Counter
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
TOP = 12


# -- the workload, inside a tree's own subprocess --------------------------------------------


async def workload(path: str, runs: int, steps: int) -> dict[str, float]:
    from runtime_bench import agent_for
    from runtime_bench import lookup

    from runtime import Runtime
    from store import open_store

    store = await open_store(f"sqlite:///{path}")
    agent = agent_for(steps, lookup)
    rt = Runtime(store, [agent], worker_id="ab")
    await rt.start(agent.name, "warm up", run_id="warm-up")
    wall, cpu = time.perf_counter(), time.process_time()
    await asyncio.gather(*(rt.start(agent.name, f"t{i}", run_id=f"r{i}") for i in range(runs)))
    wall, cpu = time.perf_counter() - wall, time.process_time() - cpu
    done = await rt.list("done", limit=runs + 1)
    await store.close()
    if len(done) != runs + 1:
        raise SystemExit("every run must finish")
    total = runs * (steps + 1)
    return {"steps_per_s": total / wall, "cpu_ms_per_step": cpu / total * 1000}


# -- the parent: rounds, the floor, the report --------------------------------------------------


def measure(
    tree: Path, directory: str, args: argparse.Namespace, spy: Path | None = None
) -> dict[str, float]:
    """The workload in a subprocess that imports only `tree` (and these benchmarks)."""
    path = tempfile.mktemp(suffix=".db", dir=directory)
    command = [sys.executable, __file__, "--workload", path, "--runs", str(args.runs)]
    command += ["--steps", str(args.steps)]
    if spy is not None:
        command = [
            "py-spy",
            "record",
            "--gil",
            "-r",
            "400",
            "-f",
            "raw",
            "-o",
            str(spy),
            "--",
            *command,
        ]
    env = os.environ | {"PYTHONPATH": os.pathsep.join([str(tree), str(HERE)])}
    done = subprocess.run(command, env=env, capture_output=True, text=True, check=False)
    if done.returncode != 0:
        raise SystemExit(f"{tree}: {done.stderr[-2000:]}")
    found = [line for line in done.stdout.splitlines() if line.startswith("{")]  # not py-spy's
    return dict(json.loads(found[-1]))


def top_frames(raw: Path, top: int) -> list[str]:
    """The frames most samples were taken in (their own samples, not their callees'), as a
    share of the workload's samples: those taken on the event loop, imports left out (a
    short workload's profile is otherwise mostly the imports). The first line counts them,
    which compares two trees' Python over the same work."""
    own: Counter[str] = Counter()
    for line in raw.read_text("utf-8").splitlines():
        stack, _, count = line.rpartition(" ")
        if stack and count.isdigit() and "_run_once" in stack and "importlib" not in stack:
            own[stack.split(";")[-1]] += int(count)
    total = sum(own.values()) or 1
    lines = [f"{total} samples on the event loop (imports left out)"]
    return lines + [f"{n / total:6.1%}  {frame}" for frame, n in own.most_common(top)]


def main() -> None:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--old", type=Path, help="a checkout of the older commit")
    parser.add_argument("--rounds", type=int, default=7)
    parser.add_argument("--runs", type=int, default=100)
    parser.add_argument("--steps", type=int, default=40)
    parser.add_argument("--dir", default=None, help="where to put the database files")
    parser.add_argument("--profile", type=Path, default=None, help="profile each tree too")
    parser.add_argument("--workload", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.workload:
        print(json.dumps(asyncio.run(workload(args.workload, args.runs, args.steps))))
        return
    if args.old is None:
        parser.error("--old: a checkout of the commit to compare with (git worktree add)")
    from runtime_bench import floor_costs

    trees = {"old": args.old.resolve(), "this": ROOT}
    results: dict[str, list[dict[str, float]]] = {name: [] for name in trees}
    floors, loads = [], [os.getloadavg()[0]]
    with tempfile.TemporaryDirectory(dir=args.dir) as directory:
        for number in range(args.rounds):
            floors.append(floor_costs(directory, 400))
            for name in ("old", "this") if number % 2 == 0 else ("this", "old"):
                results[name].append(measure(trees[name], directory, args))
            loads.append(os.getloadavg()[0])
        if args.profile is not None:
            args.profile.mkdir(parents=True, exist_ok=True)
            for name, tree in trees.items():
                measure(tree, directory, args, spy=args.profile / f"{name}.txt")
    report(args, results, floors, loads)


def report(
    args: argparse.Namespace,
    results: dict[str, list[dict[str, float]]],
    floors: list[tuple[float, float]],
    loads: list[float],
) -> None:
    print(
        f"{args.runs} concurrent runs x {args.steps} read steps, SQLite synchronous=FULL, "
        f"{args.rounds} interleaved rounds (load average {min(loads):.1f}-{max(loads):.1f})"
    )
    print(f"{'tree':>6} {'steps/s':>9} {'cpu ms/step':>12}")
    for name, measured in results.items():
        rate = statistics.median(r["steps_per_s"] for r in measured)
        cpu = statistics.median(r["cpu_ms_per_step"] for r in measured)
        print(f"{name:>6} {rate:>9,.0f} {cpu:>12.3f}")
    ratios = [
        this["steps_per_s"] / old["steps_per_s"]
        for this, old in zip(results["this"], results["old"], strict=True)
    ]
    cpus = [
        this["cpu_ms_per_step"] / old["cpu_ms_per_step"]
        for this, old in zip(results["this"], results["old"], strict=True)
    ]
    print(
        f"this / old, steps/s: {statistics.median(ratios):.2f} "
        f"(by round: {' '.join(f'{r:.2f}' for r in ratios)})"
    )
    print(
        f"this / old, CPU per step: {statistics.median(cpus):.2f} "
        f"(by round: {' '.join(f'{r:.2f}' for r in cpus)})"
    )
    floor_rate = statistics.median(1000 / f[0] for f in floors)
    fsync = statistics.median(f[0] - f[1] for f in floors)
    print(f"the floor (one commit per step): {floor_rate:,.0f} steps/s, fsync {fsync:.3f} ms")
    if args.profile is not None:
        for name in results:
            print(f"top frames, {name} (own samples holding the GIL, share of all):")
            for line in top_frames(args.profile / f"{name}.txt", TOP):
                print(f"  {line}")


if __name__ == "__main__":
    main()
