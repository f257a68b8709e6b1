"""Backtest benchmark: what the "approve + similar" modal's backtest costs over a big audit
trail, and what a learned rule adds to each new approval.

    python benchmarks/backtest_bench.py [--events 100000] [--rounds 5]

The audit trail is written straight into a migrated SQLite file (synchronous=FULL store):
`--events` events in the shapes the store's triggers write, a quarter of them requests for
`issue_refund` (a third of those declined, a tenth edited), the rest other tools' requests,
executions and votes. Then, median of `--rounds`:

1. the backtest the modal shows (the configured window, 200 requests) and one over every
   request for the tool in the trail (the read and every condition evaluated);
2. `RuleBook.apply` on one new approval with one learned rule in force (its store read and
   its CEL evaluation), in microseconds: the time a learned rule adds per call.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import sqlite3
import statistics
import tempfile
import time
from contextlib import closing
from datetime import UTC
from datetime import datetime
from datetime import timedelta
from pathlib import Path
from typing import Any

from runtime import Agent
from runtime import Runtime
from runtime import ScriptedModel
from runtime import ToolContext
from runtime import tool
from runtime.approvals.learned_rules import LearnedRulesConfig
from store import Approval
from store import open_store

RULE = 'tool == "issue_refund" && args.currency == "EUR" && args.amount_cents <= 2500'
START = datetime(2026, 1, 1, tzinfo=UTC)


@tool(description="Refund an order.", effect="reversible", compensate="issue_refund")
async def issue_refund(
    order_id: str, amount_cents: int, currency: str, *, ctx: ToolContext
) -> dict[str, Any]:
    return {}


def seed(path: Path, events: int, **more_args: Any) -> int:
    """Write `events` audit events; returns how many are requests for issue_refund (each with
    `more_args` among its arguments)."""
    rows: list[tuple[Any, ...]] = []
    requests = 0
    for n in range(events):
        at = START.timestamp() + n
        approval = f"ap_{n // 4}"
        kind = n % 4
        if kind == 0:
            requests += 1
            args = {"order_id": f"o-{n}", "amount_cents": (n * 37) % 5000, "currency": "EUR"}
            args |= more_args
            detail = {"tool": "issue_refund", "policy": "issue_refund", "args": args}
            rows.append((at, "U0AGENT", "approval_requested", None, approval, detail))
        elif kind == 1:
            i = n // 4
            if i % 3 == 0:
                detail = {"reason": "no", "tool": "issue_refund"}
                rows.append((at, "U0BOSS", "approval_declined", None, approval, detail))
            else:
                detail = {"reason": None, "tool": "issue_refund"}
                if i % 10 == 1:
                    detail["approved_args"] = {"amount_cents": 1}
                rows.append((at, "U0BOSS", "approval_approved", None, approval, detail))
        elif kind == 2:
            detail = {"tool": "send_email", "args": {"to": "x@example.com"}}
            rows.append((at, "U0AGENT", "approval_requested", None, f"other_{n}", detail))
        else:
            detail = {"tool": "issue_refund", "call_id": f"c{n}", "args": {}}
            rows.append((at, "signoff", "effect_completed", f"run_{n}", approval, detail))
    with closing(sqlite3.connect(path)) as conn, conn:
        conn.executemany(
            "INSERT INTO audit_events (at, actor, action, run_id, approval_id, detail) "
            "VALUES (?, ?, ?, ?, ?, ?)",
            [(*row[:5], json.dumps(row[5])) for row in rows],
        )
    return requests


async def measure(path: Path, events: int, rounds: int) -> None:
    url = f"sqlite:///{path}"
    async with open_store(url):
        pass  # migrated
    requests = seed(path, events)
    async with open_store(url) as store:
        agent = Agent("ops", model=ScriptedModel(["ok"]), tools=[issue_refund])
        config = LearnedRulesConfig(writers=("U0WRITER",))
        rt = Runtime(store, [agent], learned_rules=config, clock=lambda: START)
        for label, size in (("window (200 requests)", 200), ("every request", requests)):
            times = []
            for _ in range(rounds):
                began = time.perf_counter()
                tested = await rt.rules.backtest("issue_refund", RULE, size=size)
                times.append(time.perf_counter() - began)
            print(
                f"backtest, {label}: {statistics.median(times) * 1000:.1f} ms "
                f"({tested.considered} requests, {tested.would_approve} would be approved, "
                f"{len(tested.declined)} declined) over {events} audit events"
            )
        await rt.rules.make(
            "issue_refund", RULE, author="U0WRITER", reason="bench", confirm_declined=True
        )
        await per_call(rt, rounds)


async def per_call(rt: Runtime, rounds: int) -> None:
    args = {"order_id": "o-1", "amount_cents": 1000, "currency": "EUR"}
    approval = Approval(
        id="ap_new", tool="issue_refund", args=args, created_at=START + timedelta(1)
    )
    calls = 200
    medians = []
    for _ in range(rounds):
        began = time.perf_counter()
        for _ in range(calls):
            applied = await rt.rules.apply(approval, None)
        medians.append((time.perf_counter() - began) / calls)
    assert applied.state == "approved"
    print(f"learned rule per new approval (read + CEL): {statistics.median(medians) * 1e6:.0f} µs")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--events", type=int, default=100_000)
    parser.add_argument("--rounds", type=int, default=5)
    options = parser.parse_args()
    with tempfile.TemporaryDirectory() as folder:
        asyncio.run(measure(Path(folder) / "backtest.db", options.events, options.rounds))


if __name__ == "__main__":
    main()
