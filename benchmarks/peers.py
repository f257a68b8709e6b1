"""Signoff next to its peers on one workload, in one run: LangGraph (SQLite saver) and DBOS
(SQLite), with the raw SQLite floor as the reference; or, with `--postgres URL`, Signoff and
DBOS both on PostgreSQL, with PostgreSQL's raw floor as the reference.

    pip install -e '.[bench]'
    python benchmarks/peers.py [--rounds 5] [--runs 100] [--steps 40]
    python benchmarks/peers.py --postgres postgresql://postgres@127.0.0.1:5432/test

A step is a ~300-byte model reply with one tool call and a ~500-byte tool result, durably
checkpointed before the next step: Signoff's read tool (one commit per step) and its
irreversible, non-idempotent tool (two commits, by design); LangGraph with `durability="sync"`
(a model node and a tool node, each checkpointed before the next runs); DBOS with a model step
and a tool step in a workflow. Each peer runs with its own defaults for its SQLite file.

Every measurement runs in its own subprocess (DBOS is one per process; a fresh interpreter
also keeps one system's garbage out of another's timing), systems interleaved within each
round, medians over rounds. CPU per step is the subprocess's process time over its steps (on
PostgreSQL that leaves out the server's CPU, which runs in its own processes).

On PostgreSQL each measurement gets a fresh schema (Signoff, the floor) or a fresh database
(DBOS, which makes its own system database), dropped after; the floor is one INSERT per step
in its own transaction on one connection (asyncpg), runs one after another.
"""

from __future__ import annotations

import argparse
import json
import operator
import os
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Annotated
from typing import Any
from typing import TypedDict

TEXT = "t" * 300
RESULT = {"rows": "r" * 480}
ARGS = {"key": "k", "payload": "p" * 80}

SINGLE = ("floor", "floor_two_commits", "signoff_read", "signoff_record", "langgraph", "dbos")
CONCURRENT = ("floor", "signoff_read", "langgraph", "dbos")
PG_SINGLE = ("pg_floor", "pg_floor_two_commits", "pg_signoff_read", "pg_signoff_record", "pg_dbos")
PG_CONCURRENT = ("pg_floor", "pg_signoff_read", "pg_dbos")


def reply(turn: int) -> dict[str, object]:
    call = {"id": f"c{turn}", "name": "lookup", "arguments": ARGS}
    return {"role": "assistant", "content": f"step {turn} {TEXT}", "tool_calls": [call]}


# --- one measurement, inside its own subprocess -------------------------------------------


class State(TypedDict):
    """LangGraph's state: the transcript, appended to by each node, and the turn."""

    messages: Annotated[list[dict[str, Any]], operator.add]
    turn: int


class Timing:
    wall = 0.0
    cpu = 0.0


@contextmanager
def timed(timing: Timing) -> Iterator[None]:
    """Time only the driving, not imports, schema creation or the warm-up run."""
    wall, cpu = time.perf_counter(), time.process_time()
    yield
    timing.wall, timing.cpu = time.perf_counter() - wall, time.process_time() - cpu


def measure_floor(path: str, runs: int, steps: int, timing: Timing, commits: int = 1) -> None:
    """One INSERT + COMMIT per step (or two, for `commits=2`), runs one after another: the
    least any durable engine can do per step on this disk."""
    import sqlite3

    conn = sqlite3.connect(path, isolation_level=None)
    conn.execute("PRAGMA journal_mode = WAL")
    conn.execute("PRAGMA synchronous = FULL")
    conn.execute(
        "CREATE TABLE steps (run_id TEXT, seq INTEGER, body TEXT, PRIMARY KEY (run_id, seq))"
    )
    seq = 0
    with timed(timing):
        for run in range(runs):
            for turn in range(steps):
                result = {"role": "tool", "tool_call_id": f"c{turn}", "content": json.dumps(RESULT)}
                bodies = [[reply(turn), result]] if commits == 1 else [[reply(turn)], [result]]
                for body in bodies:
                    conn.execute("BEGIN")
                    conn.execute(
                        "INSERT INTO steps VALUES (?, ?, ?)", (f"r{run}", seq, json.dumps(body))
                    )
                    conn.execute("COMMIT")
                    seq += 1
    conn.close()


def measure_signoff(url: str, runs: int, steps: int, timing: Timing, tool_name: str) -> None:
    import asyncio

    import runtime_bench

    from runtime import Runtime
    from store import open_store

    chosen = runtime_bench.lookup if tool_name == "lookup" else runtime_bench.record

    async def drive() -> None:
        store = await open_store(url)
        agent = runtime_bench.agent_for(steps - 1, chosen)  # its last step answers
        rt = Runtime(store, [agent], worker_id="bench")
        await rt.start(agent.name, "warm up", run_id="warm-up")
        with timed(timing):
            await asyncio.gather(
                *(rt.start(agent.name, f"t{i}", run_id=f"r{i}") for i in range(runs))
            )
        done = await rt.list("done", limit=runs + 2)
        await store.close()
        if len(done) != runs + 1 or any(run.usage.steps != steps for run in done):
            raise SystemExit("every Signoff run must finish with all its steps")

    asyncio.run(drive())


def measure_langgraph(path: str, runs: int, steps: int, timing: Timing) -> None:
    import asyncio

    from langgraph.checkpoint.sqlite.aio import AsyncSqliteSaver
    from langgraph.graph import END
    from langgraph.graph import START
    from langgraph.graph import StateGraph

    def model(state: State) -> dict[str, object]:
        if state["turn"] >= steps - 1:
            return {"messages": [{"role": "assistant", "content": "done"}]}
        return {"messages": [reply(state["turn"])]}

    def tools(state: State) -> dict[str, object]:
        call_id = state["messages"][-1]["tool_calls"][0]["id"]
        result = {"role": "tool", "tool_call_id": call_id, "content": json.dumps(RESULT)}
        return {"messages": [result], "turn": state["turn"] + 1}

    def route(state: State) -> str:
        return "tools" if state["messages"][-1].get("tool_calls") else END

    graph = StateGraph(State)
    graph.add_node("model", model)
    graph.add_node("tools", tools)
    graph.add_edge(START, "model")
    graph.add_conditional_edges("model", route, ["tools", END])
    graph.add_edge("tools", "model")

    async def drive() -> None:
        async with AsyncSqliteSaver.from_conn_string(path) as saver:
            app = graph.compile(checkpointer=saver)

            async def one(thread: str) -> None:
                config: Any = {"configurable": {"thread_id": thread}, "recursion_limit": 4 * steps}
                start = {"messages": [{"role": "user", "content": thread}], "turn": 0}
                state = await app.ainvoke(start, config, durability="sync")
                if state["turn"] != steps - 1:
                    raise SystemExit("every LangGraph run must finish with all its steps")

            await one("warm-up")
            with timed(timing):
                await asyncio.gather(*(one(f"r{i}") for i in range(runs)))

    asyncio.run(drive())


def measure_dbos(url: str, runs: int, steps: int, timing: Timing) -> None:
    from dbos import DBOS

    DBOS(config={"name": "peers", "system_database_url": url})

    @DBOS.step()
    def model(turn: int) -> dict[str, object]:
        return reply(turn)

    @DBOS.step()
    def lookup(arguments: dict[str, str]) -> dict[str, str]:
        return RESULT

    @DBOS.workflow()
    def agent(task: str) -> int:
        for turn in range(steps - 1):
            lookup(model(turn)["tool_calls"][0]["arguments"])  # type: ignore[index]
        model(steps - 1)  # the answer
        return steps - 1

    DBOS.launch()
    agent("warm up")
    with timed(timing):
        handles = [DBOS.start_workflow(agent, f"t{i}") for i in range(runs)]
        results = [handle.get_result() for handle in handles]
    DBOS.destroy()
    if any(result != steps - 1 for result in results):
        raise SystemExit("every DBOS workflow must finish with all its steps")


def measure_pg_floor(url: str, runs: int, steps: int, timing: Timing, commits: int = 1) -> None:
    """PostgreSQL's floor: one INSERT per step (or two, for `commits=2`), each its own
    transaction (one round trip and one commit each), runs one after another."""
    import asyncio

    import asyncpg

    async def drive() -> None:
        conn = await asyncpg.connect(url)
        await conn.execute(
            "CREATE TABLE steps (run_id TEXT, seq INTEGER, body TEXT, PRIMARY KEY (run_id, seq))"
        )
        insert = "INSERT INTO steps VALUES ($1, $2, $3)"
        body = json.dumps(reply(0)) + json.dumps(RESULT)
        await conn.execute(insert, "warm-up", 0, body)
        with timed(timing):
            for run in range(runs):
                for seq in range(steps * commits):
                    await conn.execute(insert, f"r{run}", seq, body[: len(body) // commits])
        await conn.close()

    asyncio.run(drive())


def run_one(system: str, path: str, runs: int, steps: int) -> dict[str, float]:
    timing = Timing()
    sqlite = f"sqlite:///{path}"
    work: dict[str, Callable[[], None]] = {
        "floor": lambda: measure_floor(path, runs, steps, timing),
        "floor_two_commits": lambda: measure_floor(path, runs, steps, timing, commits=2),
        "signoff_read": lambda: measure_signoff(sqlite, runs, steps, timing, "lookup"),
        "signoff_record": lambda: measure_signoff(sqlite, runs, steps, timing, "record"),
        "langgraph": lambda: measure_langgraph(path, runs, steps, timing),
        "dbos": lambda: measure_dbos(sqlite, runs, steps, timing),
        "pg_floor": lambda: measure_pg_floor(path, runs, steps, timing),
        "pg_floor_two_commits": lambda: measure_pg_floor(path, runs, steps, timing, commits=2),
        "pg_signoff_read": lambda: measure_signoff(path, runs, steps, timing, "lookup"),
        "pg_signoff_record": lambda: measure_signoff(path, runs, steps, timing, "record"),
        "pg_dbos": lambda: measure_dbos(path, runs, steps, timing),
    }
    work[system]()
    total = runs * steps
    return {
        "ms_per_step": timing.wall / total * 1000,
        "cpu_ms_per_step": timing.cpu / total * 1000,
        "steps_per_s": total / timing.wall,
    }


@contextmanager
def fresh_postgres(system: str, server: str) -> Iterator[str]:
    """A fresh place on the server for one PostgreSQL measurement, as the URL the system
    runs on: a schema (Signoff, the floor) or a database (DBOS makes its own tables in its
    system database); dropped after."""
    import asyncio

    import asyncpg

    name = f"peers_{system}_{time.monotonic_ns()}"
    is_database = system == "pg_dbos"

    async def run(statement: str) -> None:
        conn = await asyncpg.connect(server)
        try:
            await conn.execute(statement)
        finally:
            await conn.close()

    if is_database:
        asyncio.run(run(f"CREATE DATABASE {name}"))
        url = f"{server.rpartition('/')[0]}/{name}"
    else:
        asyncio.run(run(f"CREATE SCHEMA {name}"))
        url = f"{server}{'&' if '?' in server else '?'}search_path={name}"
    try:
        yield url
    finally:
        drop = f"DATABASE {name} WITH (FORCE)" if is_database else f"SCHEMA {name} CASCADE"
        asyncio.run(run(f"DROP {drop}"))


# --- the orchestrator -----------------------------------------------------------------------


def measure(
    system: str, directory: str, runs: int, steps: int, postgres: str | None = None
) -> dict[str, float]:
    if postgres is not None:
        with fresh_postgres(system, postgres) as url:
            return run_subprocess(system, url, runs, steps)
    return run_subprocess(
        system, os.path.join(directory, f"{system}-{time.monotonic_ns()}.db"), runs, steps
    )


def run_subprocess(system: str, path: str, runs: int, steps: int) -> dict[str, float]:
    here = os.path.dirname(os.path.abspath(__file__))
    command = [
        sys.executable,
        __file__,
        "--one",
        system,
        "--path",
        path,
        "--runs",
        str(runs),
        "--steps",
        str(steps),
    ]
    env = os.environ | {"PYTHONPATH": os.pathsep.join([here, os.path.dirname(here)])}
    out = subprocess.run(command, capture_output=True, text=True, env=env, check=False)
    if out.returncode != 0:
        raise SystemExit(f"{system} failed:\n{out.stderr[-3000:]}")
    return json.loads(out.stdout.strip().splitlines()[-1])


def table(
    title: str,
    systems: tuple[str, ...],
    rounds: int,
    runs: int,
    steps: int,
    directory: str,
    key: str,
    postgres: str | None = None,
) -> None:
    """Print medians per system, and each system's ratio to the floor taken in its own round;
    the ratio to the two-commit floor, where measured, is the one for two-commit steps."""
    results: dict[str, list[dict[str, float]]] = {system: [] for system in systems}
    for _ in range(rounds):
        for system in systems:  # interleaved: every system once per round
            results[system].append(measure(system, directory, runs, steps, postgres))
    floors = [
        name
        for name in ("floor", "floor_two_commits", "pg_floor", "pg_floor_two_commits")
        if name in results
    ]
    print(f"\n{title}")
    print(
        f"{'system':>20} {key:>12} "
        + " ".join(f"{'x ' + f:>19}" for f in floors)
        + f" {'cpu ms/step':>12}"
    )
    for system, rows in results.items():
        ratios = [
            statistics.median(r[key] / f[key] for r, f in zip(rows, results[floor], strict=True))
            for floor in floors
        ]
        print(
            f"{system:>20} {statistics.median(r[key] for r in rows):>12.3f} "
            + " ".join(f"{ratio:>19.2f}" for ratio in ratios)
            + f" {statistics.median(r['cpu_ms_per_step'] for r in rows):>12.3f}"
        )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--runs", type=int, default=100, help="concurrent runs")
    parser.add_argument("--steps", type=int, default=40, help="steps per concurrent run")
    parser.add_argument(
        "--postgres", metavar="URL", help="Signoff and DBOS on this PostgreSQL server instead"
    )
    parser.add_argument("--one", choices=SINGLE + PG_SINGLE, help=argparse.SUPPRESS)
    parser.add_argument("--path", help=argparse.SUPPRESS)
    parser.add_argument("--dir", default=None, help="where to put the database files")
    args = parser.parse_args()
    if args.one and args.postgres:  # one measurement on a place of its own
        with fresh_postgres(args.one, args.postgres) as url:
            print(json.dumps(run_one(args.one, url, args.runs, args.steps)))
        return
    if args.one:
        print(json.dumps(run_one(args.one, args.path, args.runs, args.steps)))
        return
    single, concurrent = (PG_SINGLE, PG_CONCURRENT) if args.postgres else (SINGLE, CONCURRENT)
    with tempfile.TemporaryDirectory(dir=args.dir) as directory:
        for steps in (40, 200):
            table(
                f"one run of {steps} steps (medians of {args.rounds} interleaved rounds)",
                single,
                args.rounds,
                1,
                steps,
                directory,
                "ms_per_step",
                args.postgres,
            )
        table(
            f"{args.runs} concurrent runs x {args.steps} steps",
            concurrent,
            args.rounds,
            args.runs,
            args.steps,
            directory,
            "steps_per_s",
            args.postgres,
        )


if __name__ == "__main__":
    main()
