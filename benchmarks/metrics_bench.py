"""What a `/metrics` scrape costs as history grows: the database's part of it
(`Store.operational_counts`) on a small database and on one with 100x the finished history
(runs, effects, decided approvals, audit events, sent outbox rows), the same live work in
both. Rounds interleave the two, and the reference (a naive count of every table by state,
on the large database) so the machine's drift hits all alike; medians are printed.

    python benchmarks/metrics_bench.py [--small 1000] [--factor 100] [--rounds 200]
"""

from __future__ import annotations

import argparse
import asyncio
import sqlite3
import statistics
import tempfile
import time
from pathlib import Path

from store import open_store

NAIVE = (  # every row of each table, counted by state
    "SELECT status, count(*) FROM runs GROUP BY status",
    "SELECT status, count(*) FROM effects GROUP BY status",
    "SELECT state, count(*) FROM approvals GROUP BY state",
    "SELECT sent_at IS NULL, count(*) FROM outbox GROUP BY 1",
)


def fill(path: Path, finished: int) -> None:
    """`finished` done runs with a completed effect, a decided approval and sent outbox rows;
    then the same live work in every database: runs running and parked, pending approvals,
    effects in doubt, open pages and undelivered rows."""
    now = time.time()
    conn = sqlite3.connect(path)
    with conn:
        for n in range(finished):
            _run(conn, f"done-{n}", "done", now)
            _effect(conn, f"done-{n}", "completed", now)
            _approval(conn, f"ap-done-{n}", f"done-{n}", "approved", now)
        conn.execute("UPDATE outbox SET sent_at = ?", (now,))
        for n in range(10):
            _run(conn, f"running-{n}", "running", now)
        for n in range(20):
            _run(conn, f"parked-{n}", "waiting_approval", now)
            _approval(conn, f"ap-parked-{n}", f"parked-{n}", "pending", now)
        for n in range(3):
            _effect(conn, f"running-{n}", "in_doubt", now)
            conn.execute(
                "INSERT INTO pages (id, run_id, reason, detail, delivery, created_at) "
                "VALUES (?, ?, 'in_doubt', '', 'pending', ?)",
                (f"pg-{n}", f"running-{n}", now),
            )
    conn.close()


def _run(conn: sqlite3.Connection, run_id: str, status: str, now: float) -> None:
    conn.execute(
        "INSERT INTO runs (id, agent, task, status, budget, lineage_id, dry_run, created_at, "
        "updated_at) VALUES (?, 'bench', 'task', ?, '{}', ?, 0, ?, ?)",
        (run_id, status, run_id, now, now),
    )


def _effect(conn: sqlite3.Connection, run_id: str, status: str, now: float) -> None:
    conn.execute(
        "INSERT INTO effects (run_id, call_id, lineage_id, step, tool, reversibility, "
        "idempotency_key, idempotent, status, started_at, args) "
        "VALUES (?, 'c1', ?, 1, 'pay', 'irreversible', ?, 0, ?, ?, '{\"amount\": 5}')",
        (run_id, run_id, f"key-{run_id}", status, now),
    )


def _approval(
    conn: sqlite3.Connection, approval_id: str, run_id: str, state: str, now: float
) -> None:
    conn.execute(
        "INSERT INTO approvals (id, run_id, tool, args, policy, state, required_approvals, "
        "reminders_sent, escalated, delivery, created_at) "
        "VALUES (?, ?, 'pay', '{\"amount\": 5}', 'default', ?, 1, 0, 0, 'delivered', ?)",
        (approval_id, run_id, state, now),
    )


async def main(small: int, factor: int, rounds: int) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        stores = {}
        for name, finished in (("small", small), ("large", small * factor)):
            path = Path(tmp) / f"{name}.db"
            store = await open_store(f"sqlite:///{path}")
            fill(path, finished)
            stores[name] = store
        naive = sqlite3.connect(Path(tmp) / "large.db")
        counts = [await store.operational_counts() for store in stores.values()]
        live = [
            (c.runs_running, c.approvals_pending, c.effects_in_doubt, c.pages_open) for c in counts
        ]
        assert live[0] == live[1] == (10, 20, 3, 3), live  # the same live work in both
        timings: dict[str, list[float]] = {"small": [], "large": [], "naive large": []}
        for n in range(rounds):
            order = list(stores.items())
            for name, store in order if n % 2 else reversed(order):  # neither always first
                started = time.perf_counter()
                await store.operational_counts()
                timings[name].append(time.perf_counter() - started)
            started = time.perf_counter()
            for query in NAIVE:
                naive.execute(query).fetchall()
            timings["naive large"].append(time.perf_counter() - started)
        naive.close()
        for store in stores.values():
            await store.close()
    print(f"operational_counts per scrape, median of {rounds} interleaved rounds:")
    medians = {name: statistics.median(values) * 1000 for name, values in timings.items()}
    print(f"  {small:>9,} finished runs: {medians['small']:.3f} ms")
    print(f"  {small * factor:>9,} finished runs: {medians['large']:.3f} ms")
    print(f"  naive count by state, {small * factor:,} runs: {medians['naive large']:.3f} ms")
    print(f"large / small: {medians['large'] / medians['small']:.2f} (flat is 1.0)")


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--small", type=int, default=1000)
    parser.add_argument("--factor", type=int, default=100)
    parser.add_argument("--rounds", type=int, default=200)
    options = parser.parse_args()
    asyncio.run(main(options.small, options.factor, options.rounds))
