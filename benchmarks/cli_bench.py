"""CLI benchmark: how long a `signoff` command takes, from exec to exit, and what it imports.

    python benchmarks/cli_bench.py [--rounds 21] [--runs 20] [--top 8] [--stages] [--against TREE]

Each round runs, one after the other, `python -c pass` (the floor: starting the interpreter
this venv uses) and each command, so whatever the machine drifts by touches all of them
alike: `signoff --help`; `runs list` and `approvals list` on a database holding `--runs` runs,
each parked on a refund's approval; `policy check` of a refund against the refund example's
policy file (its three CEL rules); `approvals decide`, approving one of those refunds (the
run resumes in the command and finishes: the refund issued, the customer told). A first round,
not timed, writes every module's bytecode cache (an installed package has one; with
PYTHONDONTWRITEBYTECODE set, as in CI, each command would recompile Signoff's sources on
every start, and the figures would measure the compiler). Prints the median wall time and
CPU time (user + system) of each and how far each sits above the floor's (the aim: `--help`
and the reads within 0.2 s of it, a decision within 0.5 s in all; on a loaded machine the
CPU time is the steadier figure, as the wall time waits for a core), the machine's load
average, and then, from one run of each command under `python -X importtime`, the modules it
imported first that took longest (cumulative milliseconds; the measured time is a little
inflated by the measuring; a module a package loads on first use through
`importlib.import_module` is counted in the module that asked for the name). Last, where
`runs list`'s CPU time goes (`--stages`): processes that each do one step more of what the
command does (start typer and the command tree; load pydantic and typer's coercion; read the
database's settings; load the runtime's database door with the records and the SQLite
backend; open the database and run the command's queries; the command itself, which adds
parsing, rich's table and printing), interleaved as above; each step's cost is the difference
of its median from the one before. With `--against TREE`, every command also runs on the
code in TREE (an older checkout, put first on PYTHONPATH), in the same rounds, interleaved.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
SIGNOFF = str(Path(sys.executable).with_name("signoff"))
POLICY = str(ROOT / "examples" / "signoff.toml")
REFUND = '{"order_id": "4471", "amount_cents": 30000}'


async def fill(url: str, runs: int) -> list[str]:
    """`runs` refund runs, each driven to its approval; their approvals' ids."""
    from examples.refund_agent import agent as refund_agent
    from runtime import Runtime
    from store import open_store

    store = await open_store(url)
    try:
        rt = Runtime(store, [refund_agent], worker_id="cli-bench")
        for i in range(runs):
            await rt.start("refund-agent", f"Refund order {4000 + i}", run_id=f"bench-{i}")
        return [a.id for a in await rt.approvals(state="pending")]
    finally:
        await store.close()


def wall(command: list[str], env: dict[str, str], cwd: str) -> tuple[float, float]:
    """The command's wall time and the CPU time (user + system) its process used."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    started = time.perf_counter()
    done = subprocess.run(command, env=env, cwd=cwd, capture_output=True, check=False)
    elapsed = time.perf_counter() - started
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    if done.returncode != 0:
        raise SystemExit(f"{' '.join(command)} failed: {done.stderr.decode()[-500:]}")
    cpu = after.ru_utime + after.ru_stime - before.ru_utime - before.ru_stime
    return elapsed, cpu


def commands(pending: list[str]) -> dict[str, Callable[[], list[str]]]:
    """Each command's argv, made when it runs (a decision takes the next pending approval)."""
    decide = [SIGNOFF, "approvals", "decide"]
    return {
        "python -c pass": lambda: [sys.executable, "-c", "pass"],
        "signoff --help": lambda: [SIGNOFF, "--help"],
        "signoff runs list": lambda: [SIGNOFF, "runs", "list"],
        "signoff approvals list": lambda: [SIGNOFF, "approvals", "list"],
        "signoff policy check": lambda: [
            *(SIGNOFF, "--config", POLICY, "policy", "check", "issue_refund", REFUND),
        ],
        "signoff approvals decide": lambda: [*decide, pending.pop(), "approve", "--by", "U0BOSS"],
    }


STAGES = {
    "typer and the command tree (--help)": "",
    "pydantic and typer's coercion": "import bot.cli, typer._adapters",
    "the database's settings": "from bot.settings_source import database_settings as d; d()",
    "records, store, SQLite backend": "from runtime import Database; import store.sqlite",
    "open, list runs, their approvals": """
import asyncio
async def read():
    database = await Database.open(d().url)
    for run in await database.queries.runs(None, limit=50):
        await database.queries.approvals(run_id=run.id, state="pending")
    await database.close()
asyncio.run(read())""",
}
"""Each step of `runs list` after the interpreter's start, as code run after the steps before."""


def stages() -> dict[str, Callable[[], list[str]]]:
    """Processes that each do one step more of `runs list` (the first is `--help`, the last
    the command itself)."""
    found: dict[str, Callable[[], list[str]]] = {}
    code = ""
    for name, step in STAGES.items():
        code += step + "\n"
        argv = [SIGNOFF, "--help"] if not step else [sys.executable, "-c", code]
        found[name] = lambda argv=argv: argv
    found["parsing, rich's table, printing (runs list)"] = lambda: [SIGNOFF, "runs", "list"]
    return found


def timed(
    argvs: dict[str, Callable[[], list[str]]],
    env: dict[str, str],
    cwd: str,
    rounds: int,
    envs: dict[str, dict[str, str]] | None = None,
) -> tuple[dict[str, list[tuple[float, float]]], list[float]]:
    """Each command's (wall, CPU) per round, the rounds interleaved; the load averages seen.
    `envs`: a command's own environment, in place of `env`."""
    envs = envs or {}
    for name, argv in argvs.items():  # the bytecode caches, written once
        wall(argv(), envs.get(name, env), cwd)
    loads = [os.getloadavg()[0]]
    times: dict[str, list[tuple[float, float]]] = {name: [] for name in argvs}
    for _ in range(rounds):
        for name, argv in argvs.items():
            times[name].append(wall(argv(), envs.get(name, env), cwd))
        loads.append(os.getloadavg()[0])
    return times, loads


def against(
    argvs: dict[str, Callable[[], list[str]]], env: dict[str, str], tree: str
) -> tuple[dict[str, Callable[[], list[str]]], dict[str, dict[str, str]]]:
    """The commands, each also on the code in `tree` (named with " (before)")."""
    older = env | {"PYTHONPATH": os.pathsep.join(filter(None, [tree, env.get("PYTHONPATH")]))}
    both: dict[str, Callable[[], list[str]]] = {}
    envs = {}
    for name, argv in argvs.items():
        both[name] = argv
        if name != "python -c pass":
            both[f"{name} (before)"] = argv
            envs[f"{name} (before)"] = older
    return both, envs


def print_stages(env: dict[str, str], cwd: str, rounds: int) -> None:
    argvs = {"python -c pass": lambda: [sys.executable, "-c", "pass"], **stages()}
    times, loads = timed(argvs, env, cwd, rounds)
    print(
        f"where runs list's CPU goes: median of {rounds} interleaved rounds "
        f"(load average {min(loads):.1f}-{max(loads):.1f}), seconds:"
    )
    before = None
    for name, measured in times.items():
        cpu = statistics.median(m[1] for m in measured)
        step = "" if before is None else f"+{cpu - before:.3f}"
        print(f"  {cpu:7.3f} {step:>7}  {name}")
        before = cpu


def top_imports(argv: list[str], env: dict[str, str], cwd: str, top: int) -> list[str]:
    """The `top` modules the command imported first (not by another module), by cumulative
    import time, from one run under `-X importtime`."""
    script = argv[0] == SIGNOFF
    code = ["-c", "from bot.cli import main; main()", *argv[1:]] if script else argv[1:]
    done = subprocess.run(
        [sys.executable, "-X", "importtime", *code], env=env, cwd=cwd, capture_output=True
    )
    found = []
    for line in done.stderr.decode().splitlines():
        parts = line.removeprefix("import time:").split("|")
        if len(parts) != 3 or not parts[1].strip().isdigit():
            continue
        name = parts[2]
        if len(name) - len(name.lstrip()) == 1:  # imported by the command, not a module
            found.append((int(parts[1]), name.strip()))
    return [f"{us / 1000:6.1f} {name}" for us, name in sorted(found, reverse=True)[:top]]


def main() -> None:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--rounds", type=int, default=21)
    parser.add_argument("--runs", type=int, default=20)
    parser.add_argument("--top", type=int, default=8, help="top importers shown per command")
    parser.add_argument("--stages", action="store_true", help="where runs list's time goes")
    parser.add_argument("--against", metavar="TREE", help="an older checkout, run beside")
    options = parser.parse_args()
    with tempfile.TemporaryDirectory() as home:
        url = f"sqlite:///{home}/signoff.db"
        dropped = ("SIGNOFF_", "SLACK_", "PYTHONDONTWRITEBYTECODE")
        env = {k: v for k, v in os.environ.items() if not k.startswith(dropped)}
        env |= {"SIGNOFF_DATABASE_URL": url, "SIGNOFF_WORLD_DB": f"{home}/world.db"}
        os.environ["SIGNOFF_WORLD_DB"] = env["SIGNOFF_WORLD_DB"]
        needed = (options.rounds + 2) * (2 if options.against else 1)
        pending = asyncio.run(fill(url, max(options.runs, needed)))
        argvs, envs = commands(pending), {}
        if options.against:
            argvs, envs = against(argvs, env, options.against)
        times, loads = timed(argvs, env, home, options.rounds, envs)
        print(
            f"median of {options.rounds} interleaved rounds "
            f"(load average {min(loads):.1f}-{max(loads):.1f}), seconds:"
        )
        print(f"  {'':<34} {'wall':>6} {'above floor':>12} {'CPU':>7} {'above floor':>12}")
        floor = [statistics.median(m) for m in zip(*times["python -c pass"], strict=True)]
        for name, measured in times.items():
            median = [statistics.median(m) for m in zip(*measured, strict=True)]
            above = [
                f"+{m - f:.3f}" if name != "python -c pass" else ""
                for m, f in zip(median, floor, strict=True)
            ]
            print(f"  {name:<34} {median[0]:6.3f} {above[0]:>12} {median[1]:7.3f} {above[1]:>12}")
        print("top importers (cumulative ms, one run of each under -X importtime):")
        for name, argv in argvs.items():
            if name != "python -c pass" and not name.endswith("(before)"):
                print(f"  {name}")
                for line in top_imports(argv(), env, home, options.top):
                    print(f"    {line}")
        if options.stages:
            print_stages(env, home, options.rounds)


if __name__ == "__main__":
    main()
