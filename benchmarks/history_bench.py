"""Flat with history: a new run on a database that already holds a million checkpoints and a
hundred thousand finished runs, against the same run on an empty database.

    python benchmarks/history_bench.py [--runs 100000] [--rounds 5] [--steps 40]
        [--backend sqlite postgres] [--url postgresql://postgres@127.0.0.1:5432/test]

Seeding: one real finished run (4 read steps through the engine: its run row, checkpoints,
effects and audit rows as the engine writes them) is cloned `--runs` times in SQL, each clone
under its own run and lineage id, so the history has the engine's own row shapes (about ten
checkpoints a run: `--runs 100000` makes about a million). Then, interleaved within each
round, a new 40-step run (the runtime benchmark's `lookup` agent) is driven on the seeded
database and on an empty one: ms per step, and `load latest` (`store.load_state` of the new
run, median of 20). Medians over rounds, and the seeded/empty ratio of each (target: within
1.2x). Each backend gets fresh databases (a file; a schema), removed after.
"""

from __future__ import annotations

import argparse
import asyncio
import itertools
import os
import secrets
import statistics
import tempfile
import time
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any

import asyncpg
from postgres_bench import DEFAULT_URL
from postgres_bench import Schema
from runtime_bench import agent_for
from runtime_bench import lookup

from runtime import Runtime
from store import Store
from store import open_store

TEMPLATE = "template-run"
CLONED = ("runs", "checkpoints", "effects", "audit_events")
"""The tables a finished run has rows in, in the order their foreign keys allow."""
ids = itertools.count()


def clone_select(table: str, columns: list[str], source: str, n: str, cat: str) -> str:
    """`INSERT ... SELECT` of `table`'s template rows once per `n` of the series `source`:
    run and lineage ids (and any key that holds them) rewritten to the clone's, generated ids
    left to the table."""
    clone_id = f"'history-' {cat} {n}"
    exprs = {
        "id": clone_id if table == "runs" else None,
        "run_id": clone_id,
        "lineage_id": clone_id,
        "idempotency_key": f"idempotency_key {cat} '-' {cat} {n}",
    }
    kept = [c for c in columns if not (c == "id" and exprs["id"] is None)]
    values = [exprs.get(c) or c for c in kept]
    where = "id" if table == "runs" else "run_id"
    return (
        f"INSERT INTO {table} ({', '.join(kept)}) SELECT {', '.join(values)} "
        f"FROM {table}, {source} WHERE {where} = '{TEMPLATE}'"
    )


async def seed_sqlite(path: str, runs: int) -> None:
    import sqlite3

    conn = sqlite3.connect(path, isolation_level=None)
    conn.execute("BEGIN")
    conn.execute(
        "CREATE TEMP TABLE series AS WITH RECURSIVE s(n) AS "
        f"(SELECT 1 UNION ALL SELECT n + 1 FROM s WHERE n < {runs}) SELECT n FROM s"
    )
    for table in CLONED:
        columns = [row[1] for row in conn.execute(f"PRAGMA table_info({table})")]
        conn.execute(clone_select(table, columns, "series", "n", "||"))
    conn.execute("COMMIT")
    conn.close()


async def seed_postgres(url: str, runs: int) -> None:
    conn = await asyncpg.connect(url)
    try:
        async with conn.transaction():
            for table in CLONED:
                columns = [
                    r["column_name"]
                    for r in await conn.fetch(
                        "SELECT column_name FROM information_schema.columns "
                        "WHERE table_schema = current_schema() AND table_name = $1 "
                        "ORDER BY ordinal_position",
                        table,
                    )
                ]
                source = f"generate_series(1, {runs}) AS series(n)"
                await conn.execute(clone_select(table, columns, source, "n::text", "||"))
        await conn.execute("ANALYZE")
    finally:
        await conn.close()


async def counts(store_url: str, backend: str) -> tuple[int, int]:
    """Checkpoints and finished runs in the database."""
    queries = ("SELECT count(*) FROM checkpoints", "SELECT count(*) FROM runs WHERE status='done'")
    if backend == "sqlite":
        import sqlite3

        conn = sqlite3.connect(store_url.removeprefix("sqlite:///"))
        found = [conn.execute(q).fetchone()[0] for q in queries]
        conn.close()
    else:
        pg = await asyncpg.connect(store_url)
        found = [await pg.fetchval(q) for q in queries]
        await pg.close()
    return found[0], found[1]


@asynccontextmanager
async def database(backend: str, directory: str, url: str) -> AsyncIterator[str]:
    """A fresh, migrated database holding the template run: its store URL."""
    if backend == "sqlite":
        store_url = f"sqlite:///{os.path.join(directory, f'h-{next(ids)}.db')}"
        await write_template(store_url)
        yield store_url
        return
    async with Schema(url) as store_url:
        await write_template(store_url)
        yield store_url


async def write_template(store_url: str) -> None:
    store = await open_store(store_url)
    agent = agent_for(4, lookup)
    await Runtime(store, [agent], worker_id="seed").start(agent.name, "t", run_id=TEMPLATE)
    await store.close()


async def new_run(store_url: str, steps: int) -> dict[str, float]:
    store: Store = await open_store(store_url)
    agent = agent_for(steps, lookup)
    rt = Runtime(store, [agent], worker_id="bench")
    run_id = f"new-{secrets.token_hex(4)}"
    started = time.perf_counter()
    await rt.start(agent.name, "benchmark", run_id=run_id)
    elapsed = time.perf_counter() - started
    loads = []
    for _ in range(20):
        t = time.perf_counter()
        await store.load_state(run_id)
        loads.append(time.perf_counter() - t)
    await store.close()
    return {
        "ms_per_step": elapsed / steps * 1000,
        "load_latest_ms": statistics.median(loads) * 1000,
    }


async def measure(backend: str, args: argparse.Namespace, directory: str) -> None:
    async with (
        database(backend, directory, args.url) as seeded,
        database(backend, directory, args.url) as empty,
    ):
        started = time.perf_counter()
        seeder = seed_sqlite if backend == "sqlite" else seed_postgres
        target = seeded.removeprefix("sqlite:///") if backend == "sqlite" else seeded
        await seeder(target, args.runs)
        checkpoints, finished = await counts(seeded, backend)
        print(
            f"\n{backend}: seeded {checkpoints:,} checkpoints, {finished:,} finished runs "
            f"in {time.perf_counter() - started:.0f} s"
        )
        results: dict[str, list[dict[str, float]]] = {"empty": [], "seeded": []}
        for _ in range(args.rounds):
            for name, store_url in (("empty", empty), ("seeded", seeded)):
                results[name].append(await new_run(store_url, args.steps))
        print(f"{'':>8} {'ms/step':>8} {'load latest ms':>15}")
        medians: dict[str, dict[str, float]] = {}
        for name, rows in results.items():
            medians[name] = {k: statistics.median(r[k] for r in rows) for k in rows[0]}
            print(
                f"{name:>8} {medians[name]['ms_per_step']:>8.3f} "
                f"{medians[name]['load_latest_ms']:>15.3f}"
            )
        ratio: dict[str, Any] = {
            k: statistics.median(
                s[k] / e[k] for s, e in zip(results["seeded"], results["empty"], strict=True)
            )
            for k in medians["empty"]
        }
        print(f"{'x empty':>8} {ratio['ms_per_step']:>8.2f} {ratio['load_latest_ms']:>15.2f}")


async def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=100_000, help="finished runs to seed")
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--steps", type=int, default=40)
    parser.add_argument("--backend", nargs="+", default=["sqlite", "postgres"])
    parser.add_argument("--url", default=DEFAULT_URL)
    parser.add_argument("--dir", default=None, help="where to put the SQLite files")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(dir=args.dir) as directory:
        for backend in args.backend:
            await measure(backend, args, directory)


if __name__ == "__main__":
    asyncio.run(main())
