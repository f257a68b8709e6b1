"""Limits benchmark: what counting a call against limits costs, with and without history.

    python benchmarks/limits_bench.py [--history 1000000] [--calls 100] [--rounds 5]
        [--backend sqlite postgres] [--url postgresql://postgres@127.0.0.1:5432/test]

Each run makes one refund call that passes the gate (a rule approves it at once), so the
gate does all its work: routes the call, reads its key's ledger, reads the limits' windows
under their locks and holds the amount, in the transaction that writes the approval. Two
databases per backend: an empty one, and one holding `--history` past refunds (their runs,
effects, approvals, holds, and the limits' counters, spread over 10,000 customers and the last
60 days; the calls measured go to customers with history in every bucket). On each, runs
with three limits (per customer over 30 days, per agent per hour, all refunds per calendar
day) and runs with none, in interleaved rounds; per round the median time of the gate
(`Gate.request`) and of the whole run. Printed: the medians over rounds, the gate with the
history against without it (target <= 1.2x), and what three limits add per gated call
(target <= 1 ms), on each backend.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import sqlite3
import statistics
import tempfile
import time
from typing import Any

from runtime import Agent
from runtime import Policies
from runtime import Runtime
from runtime import ScriptedModel
from runtime import ToolContext
from runtime import tool
from runtime.runs import gate
from runtime.spend.config import SpendConfig
from store import open_store

CUSTOMERS = 10_000
DAYS = 60
POLICIES = Policies.model_validate(
    {
        "default": {"approvers": ["U0APPROVER"]},
        "tools": {
            "issue_refund": {"rules": [{"when": "true", "auto_approve": True}]},
            "refund_leads": {"approvers": ["U0LEAD"]},
        },
    }
)
LIMITS = {
    "per_customer": {
        "key": "args.customer_id",
        "amount": "args.amount_cents",
        "max": 10**12,
        "window": "30d",
    },
    "per_agent": {"key": "run.agent", "max": 10**9, "window": "1h"},
    "per_day": {"amount": "args.amount_cents", "max": 10**12, "window": "day"},
}
THREE = SpendConfig.model_validate(
    {
        "limits": {
            name: limit | {"tools": ["issue_refund"], "ask": "refund_leads"}
            for name, limit in LIMITS.items()
        }
    }
)
COUNTERS = {  # each limit's counter (its name and window's shape), key and bucket width
    "per_customer@2592000s/86400": ("customer", 86400),
    "per_agent@3600s/120": ("agent", 120),
    "per_day@day:UTC": ("all", 86400),
}


@tool(
    description="Refund an order.",
    effect="reversible",
    compensate="issue_refund",
    requires_approval=True,
)
async def issue_refund(
    customer_id: str, order_id: str, amount_cents: int, *, ctx: ToolContext
) -> dict[str, Any]:
    return {"refunded": amount_cents}


def call(messages: Any) -> Any:
    from runtime import tool_call

    task = next(m.content for m in messages if m.role == "user")
    customer, order = task.split()
    return tool_call(
        "issue_refund", {"customer_id": customer, "order_id": order, "amount_cents": 2500}
    )


AGENT = Agent("refunds", model=ScriptedModel([call, "done"]), tools=[issue_refund])


class GateClock:
    """Times `Gate.request` (the gate's whole work for a step's calls): wall and this
    process's CPU (SQLite's writer thread included; a PostgreSQL server's work is not)."""

    def __init__(self) -> None:
        self.times: list[tuple[float, float]] = []
        self._inner = gate.Gate.request
        clock = self

        async def timed(self: gate.Gate, *args: Any, **kwargs: Any) -> Any:
            wall, cpu = time.perf_counter(), time.process_time()
            try:
                return await clock._inner(self, *args, **kwargs)
            finally:
                clock.times.append((time.perf_counter() - wall, time.process_time() - cpu))

        gate.Gate.request = timed  # type: ignore[method-assign]


# history


SQLITE_FILL = """
WITH RECURSIVE n(i) AS (SELECT 0 UNION ALL SELECT i + 1 FROM n WHERE i < {runs} - 1)
INSERT INTO runs (id, agent, task, status, budget, requested_by, lineage_id, dry_run,
                  created_at, updated_at)
SELECT 'h-' || i, 'refunds', 'past', 'done', '{{}}', 'U0ASKER', 'h-' || i, 0, {t0}, {t0}
FROM n;
WITH RECURSIVE n(i) AS (SELECT 0 UNION ALL SELECT i + 1 FROM n WHERE i < {count} - 1)
INSERT INTO effects (run_id, call_id, lineage_id, step, tool, reversibility, idempotency_key,
                     idempotent, status, approval_id, started_at, finished_at, args, result,
                     args_digest)
SELECT 'h-' || (i / 1000), 'c-' || i, 'h-' || (i / 1000), 1, 'issue_refund', 'reversible',
       'refund:h-' || i, 0, 'completed', 'ap-h-' || i, {now} - (i % {days}) * 86400.0,
       {now} - (i % {days}) * 86400.0,
       '{{"customer_id":"c' || (i % {customers}) || '","order_id":"h-' || i
       || '","amount_cents":2500}}', '{{}}', randomblob(32)
FROM n;
WITH RECURSIVE n(i) AS (SELECT 0 UNION ALL SELECT i + 1 FROM n WHERE i < {count} - 1)
INSERT INTO approvals (id, run_id, call_id, lineage_id, idempotency_key, tool, args, policy,
                       state, decided_by, decided_at, required_approvals, reminders_sent,
                       escalated, delivery, created_at, sensitive)
SELECT 'ap-h-' || i, 'h-' || (i / 1000), 'c-' || i, 'h-' || (i / 1000), 'refund:h-' || i,
       'issue_refund', '{{}}', 'issue_refund', 'approved', 'signoff',
       {now} - (i % {days}) * 86400.0, 1, 0, 0, 'delivered', {now} - (i % {days}) * 86400.0,
       '[]'
FROM n;
WITH RECURSIVE n(i) AS (SELECT 0 UNION ALL SELECT i + 1 FROM n WHERE i < {count} - 1)
INSERT INTO spend_holds (counter, key, bucket, amount, calls, run_id, call_id, approval_id,
                         state, held_at, ended_at)
SELECT 'per_customer@2592000s/86400', 'c' || (i % {customers}),
       CAST(({now} - (i % {days}) * 86400.0) / 86400 AS INTEGER), 2500, 1,
       'h-' || (i / 1000), 'c-' || i, 'ap-h-' || i, 'settled',
       {now} - (i % {days}) * 86400.0, {now} - (i % {days}) * 86400.0
FROM n;
INSERT INTO spend_counters (counter, key, bucket, amount, calls)
SELECT counter, key, bucket, sum(amount), count(*) FROM spend_holds GROUP BY 1, 2, 3;
"""

POSTGRES_FILL = """
INSERT INTO runs (id, agent, task, status, budget, requested_by, lineage_id, dry_run,
                  created_at, updated_at)
SELECT 'h-' || i, 'refunds', 'past', 'done', '{{}}', 'U0ASKER', 'h-' || i, false,
       to_timestamp({t0}), to_timestamp({t0})
FROM generate_series(0, {runs} - 1) AS i;
INSERT INTO effects (run_id, call_id, lineage_id, step, tool, reversibility, idempotency_key,
                     idempotent, status, approval_id, started_at, finished_at, args, result,
                     args_digest)
SELECT 'h-' || (i / 1000), 'c-' || i, 'h-' || (i / 1000), 1, 'issue_refund', 'reversible',
       'refund:h-' || i, false, 'completed', 'ap-h-' || i,
       to_timestamp({now} - (i % {days}) * 86400.0), to_timestamp({now} - (i % {days}) * 86400.0),
       jsonb_build_object('customer_id', 'c' || (i % {customers}), 'order_id', 'h-' || i,
                          'amount_cents', 2500), '{{}}'::jsonb, sha256(('d' || i)::bytea)
FROM generate_series(0, {count} - 1) AS i;
INSERT INTO approvals (id, run_id, call_id, lineage_id, idempotency_key, tool, args, policy,
                       state, decided_by, decided_at, required_approvals, reminders_sent,
                       escalated, delivery, created_at, sensitive)
SELECT 'ap-h-' || i, 'h-' || (i / 1000), 'c-' || i, 'h-' || (i / 1000), 'refund:h-' || i,
       'issue_refund', '{{}}'::jsonb, 'issue_refund', 'approved', 'signoff',
       to_timestamp({now} - (i % {days}) * 86400.0), 1, 0, false, 'delivered',
       to_timestamp({now} - (i % {days}) * 86400.0), '[]'::jsonb
FROM generate_series(0, {count} - 1) AS i;
INSERT INTO spend_holds (counter, key, bucket, amount, calls, run_id, call_id, approval_id,
                         state, held_at, ended_at)
SELECT 'per_customer@2592000s/86400', 'c' || (i % {customers}),
       floor(({now} - (i % {days}) * 86400.0) / 86400)::bigint, 2500, 1,
       'h-' || (i / 1000), 'c-' || i, 'ap-h-' || i, 'settled',
       to_timestamp({now} - (i % {days}) * 86400.0), to_timestamp({now} - (i % {days}) * 86400.0)
FROM generate_series(0, {count} - 1) AS i;
INSERT INTO spend_counters (counter, key, bucket, amount, calls)
SELECT counter, key, bucket, sum(amount), count(*) FROM spend_holds GROUP BY 1, 2, 3;
ANALYZE;
"""


def fill_sql(template: str, count: int) -> str:
    now = time.time()
    runs = max(1, (count + 999) // 1000)
    return template.format(
        runs=runs, count=count, now=now, t0=now - DAYS * 86400, days=DAYS, customers=CUSTOMERS
    )


async def fill_sqlite(path: str, count: int) -> None:
    await (await open_store(f"sqlite:///{path}")).close()
    if count:
        with sqlite3.connect(path) as conn:
            conn.executescript(fill_sql(SQLITE_FILL, count))
            conn.execute("ANALYZE")
        conn.close()


async def fill_postgres(url: str, count: int) -> None:
    import asyncpg

    await (await open_store(url)).close()
    if count:
        conn = await asyncpg.connect(_plain(url))
        try:
            schema = url.rsplit("search_path=", 1)[1]
            await conn.execute(f"SET search_path = {schema}")
            await conn.execute(fill_sql(POSTGRES_FILL, count))
        finally:
            await conn.close()


def _plain(url: str) -> str:
    return url.split("?", 1)[0]


# measuring

Key = tuple[str, str]
Sample = tuple[float, float, float]  # the gate's wall and CPU seconds, the run's wall


async def backend(
    urls: dict[str, str], calls: int, rounds: int, clock: GateClock
) -> dict[Key, Sample]:
    """Medians over rounds of the per-call medians; within a round the four setups take
    turns call by call, so a load that comes and goes weighs on each alike."""
    stores = {history: await open_store(url) for history, url in urls.items()}
    runtimes = {
        (history, limits): Runtime(
            store, [AGENT], policies=POLICIES, spend=spend, worker_id=f"bench-{history}-{limits}"
        )
        for history, store in stores.items()
        for limits, spend in (("none", None), ("three", THREE))
    }
    rounds_found: dict[Key, list[Sample]] = {key: [] for key in runtimes}
    try:
        for round_no in range(rounds):
            samples: dict[Key, list[Sample]] = {key: [] for key in runtimes}
            for i in range(calls + 5):  # the first five of each round warm up
                for key, rt in runtimes.items():
                    run_id = f"{key[0]}-{key[1]}-{round_no}-{i}"
                    clock.times.clear()
                    started = time.perf_counter()
                    await rt.start("refunds", f"c{i % 10} {run_id}", run_id=run_id)
                    took = time.perf_counter() - started
                    ((gate_wall, gate_cpu),) = clock.times  # one call: the gate once
                    if i >= 5:
                        samples[key].append((gate_wall, gate_cpu, took))
            for key, got in samples.items():
                rounds_found[key].append(
                    tuple(statistics.median(g[n] for g in got) for n in range(3))
                )  # type: ignore[arg-type]
    finally:
        for store in stores.values():
            await store.close()
    return {
        key: tuple(statistics.median(r[n] for r in got) for n in range(3))  # type: ignore[misc]
        for key, got in rounds_found.items()
    }


def report(label: str, history: int, found: dict[Key, Sample]) -> None:
    print(f"\n{label}")
    print(f"{'history':>10} {'limits':>7} {'gate ms':>9} {'gate CPU ms':>12} {'run ms':>9}")
    for (past, limits), (wall, cpu, run) in found.items():
        shown = f"{history:,}" if past == "history" else "0"
        print(f"{shown:>10} {limits:>7} {wall * 1e3:9.3f} {cpu * 1e3:12.3f} {run * 1e3:9.3f}")
    for limits in ("none", "three"):
        ratio = found[("history", limits)][0] / found[("empty", limits)][0]
        print(f"gate with {history:,} past effects / without ({limits} limits): {ratio:.2f}x "
              "(target <= 1.2)")  # fmt: skip
    for past in ("empty", "history"):
        extra = (found[(past, "three")][0] - found[(past, "none")][0]) * 1e3
        cpu = (found[(past, "three")][1] - found[(past, "none")][1]) * 1e3
        print(f"three limits add per gated call ({past}): {extra:+.3f} ms wall, "
              f"{cpu:+.3f} ms CPU (target <= 1 ms)")  # fmt: skip


async def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--history", type=int, default=1_000_000)
    parser.add_argument("--calls", type=int, default=100)
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--backend", nargs="+", default=["sqlite", "postgres"])
    parser.add_argument("--url", default="postgresql://postgres@127.0.0.1:5432/test")
    args = parser.parse_args()
    clock = GateClock()
    if "sqlite" in args.backend:
        with tempfile.TemporaryDirectory() as directory:
            urls = {}
            for history, count in (("empty", 0), ("history", args.history)):
                path = os.path.join(directory, f"{history}.db")
                started = time.perf_counter()
                await fill_sqlite(path, count)
                took = time.perf_counter() - started
                print(f"sqlite {history}: {count:,} past refunds in {took:.0f} s")
                urls[history] = f"sqlite:///{path}"
            found = await backend(urls, args.calls, args.rounds, clock)
        report("SQLite (a file, synchronous=FULL)", args.history, found)
    if "postgres" in args.backend:
        await with_schemas(args, clock)


async def with_schemas(args: argparse.Namespace, clock: GateClock) -> None:
    import asyncpg

    names = {h: f"signoff_limits_bench_{h}_{os.getpid()}" for h in ("empty", "history")}
    admin = await asyncpg.connect(args.url)
    try:
        for name in names.values():
            await admin.execute(f"CREATE SCHEMA {name}")
        urls = {h: f"{args.url}?search_path={name}" for h, name in names.items()}
        for history, count in (("empty", 0), ("history", args.history)):
            started = time.perf_counter()
            await fill_postgres(urls[history], count)
            took = time.perf_counter() - started
            print(f"postgres {history}: {count:,} past refunds in {took:.0f} s")
        found = await backend(urls, args.calls, args.rounds, clock)
        report("PostgreSQL (local server)", args.history, found)
    finally:
        for name in names.values():
            await admin.execute(f"DROP SCHEMA IF EXISTS {name} CASCADE")
        await admin.close()


if __name__ == "__main__":
    asyncio.run(main())
