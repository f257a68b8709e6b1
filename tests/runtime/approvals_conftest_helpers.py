"""Shared helpers for the approval, time-travel and rollback tests (imported explicitly).

- `RecordingNotifier`: a `runtime.notifier.Notifier` that remembers every call.
- `ledger`: a tiny outside world that records every tool invocation, one row each, in the
  file `SIGNOFF_WORLD_DB` names (the same file the `world` fixture points the examples at).
  Unlike the payment provider it never dedupes, so a double execution is always visible;
  `settle` dedupes by idempotency key, like Stripe.
- Small agents built from `@tool` functions and `ScriptedModel` policies.
"""

from __future__ import annotations

import json
import os
import sqlite3
from collections.abc import Callable
from collections.abc import Sequence
from contextlib import closing
from typing import Any

from runtime import Agent
from runtime import Runtime
from runtime import ScriptedModel
from runtime import ToolContext
from runtime import tool
from runtime import tool_call
from runtime.model import Entry
from store import Approval
from store import Checkpoint
from store import Message
from store import Page
from store import Run
from store import RunStatus

REQUESTER = "U_REQUESTER"
APPROVER = "U_APPROVER"

_SCHEMA = """
CREATE TABLE IF NOT EXISTS invocations (
    id              INTEGER PRIMARY KEY,
    tool            TEXT NOT NULL,
    subject         TEXT NOT NULL,
    amount          INTEGER NOT NULL,
    idempotency_key TEXT NOT NULL
);
CREATE TABLE IF NOT EXISTS settled (
    idempotency_key TEXT PRIMARY KEY,
    tool            TEXT NOT NULL,
    subject         TEXT NOT NULL
);
"""


# the recording notifier


class RecordingNotifier:
    """Implements the Notifier protocol by remembering what it was told."""

    def __init__(self) -> None:
        self.requested: list[Approval] = []
        self.decided: list[Approval] = []
        self.reminders: list[tuple[Approval, bool]] = []
        self.pages: list[Page] = []
        self.finished: list[Run] = []

    async def approval_requested(self, approval: Approval, run: Run | None) -> None:
        self.requested.append(approval)

    async def approval_decided(self, approval: Approval, run: Run | None) -> None:
        self.decided.append(approval)

    async def reminder_due(self, approval: Approval, run: Run | None, *, escalated: bool) -> None:
        self.reminders.append((approval, escalated))

    async def effect_needs_human(self, page: Page, run: Run | None) -> None:
        self.pages.append(page)

    async def run_finished(self, run: Run) -> None:
        self.finished.append(run)


# the ledger


def _connect() -> sqlite3.Connection:
    path = os.environ.get("SIGNOFF_WORLD_DB")
    if not path:
        raise RuntimeError("set SIGNOFF_WORLD_DB (the `world` fixture does) before using tools")
    conn = sqlite3.connect(path, timeout=30)
    conn.isolation_level = None
    conn.execute("PRAGMA journal_mode = WAL")
    conn.executescript(_SCHEMA)
    return conn


def record(tool_name: str, subject: str, amount: int, key: str) -> None:
    """One invocation of a tool, as the outside world saw it."""
    with closing(_connect()) as conn:
        conn.execute(
            "INSERT INTO invocations (tool, subject, amount, idempotency_key) VALUES (?, ?, ?, ?)",
            (tool_name, subject, amount, key),
        )


def settle(tool_name: str, subject: str, key: str) -> bool:
    """Apply an effect once per idempotency key; True if this call applied it."""
    with closing(_connect()) as conn:
        cursor = conn.execute(
            "INSERT INTO settled VALUES (?, ?, ?) ON CONFLICT DO NOTHING", (key, tool_name, subject)
        )
        return cursor.rowcount == 1


def invocations(tool_name: str | None = None) -> list[tuple[str, str, int, str]]:
    """(tool, subject, amount, key) of every invocation, oldest first."""
    with closing(_connect()) as conn:
        rows = conn.execute(
            "SELECT tool, subject, amount, idempotency_key FROM invocations ORDER BY id"
        ).fetchall()
    return [r for r in rows if tool_name is None or r[0] == tool_name]


def settled(tool_name: str | None = None) -> list[tuple[str, str]]:
    """(tool, subject) of every effect applied once per key."""
    with closing(_connect()) as conn:
        rows = conn.execute("SELECT tool, subject FROM settled ORDER BY rowid").fetchall()
    return [r for r in rows if tool_name is None or r[0] == tool_name]


# tools


@tool(description="Wire money to an account.", effect="irreversible", timeout=10)
def wire_money(account: str, amount_cents: int, *, ctx: ToolContext) -> dict[str, Any]:
    record("wire_money", account, amount_cents, ctx.idempotency_key)
    return {"wired": amount_cents, "to": account}


@tool(description="Look up a price.", effect="read", timeout=10)
def quote(item: str) -> dict[str, Any]:
    return {"item": item, "price_cents": 100 + len(item)}


@tool(description="Reserve stock.", effect="reversible", compensate="release", timeout=10)
def reserve(item: str, amount: int, *, ctx: ToolContext) -> dict[str, Any]:
    record("reserve", item, amount, ctx.idempotency_key)
    return {"reserved": item, "amount": amount}


@tool(
    description="Release reserved stock.",
    effect="irreversible",
    requires_approval=False,
    idempotent=True,
    timeout=10,
)
def release(item: str, amount: int, *, ctx: ToolContext) -> dict[str, Any]:
    record("release", item, -amount, ctx.idempotency_key)
    settle("release", item, ctx.idempotency_key)
    return {"released": item}


@tool(description="Hold a seat.", effect="reversible", compensate="unhold", timeout=10)
def hold(seat: str, *, ctx: ToolContext) -> dict[str, Any]:
    record("hold", seat, 1, ctx.idempotency_key)
    return {"held": seat}


@tool(description="Give a held seat back; not idempotent.", effect="irreversible", timeout=10)
def unhold(seat: str, *, ctx: ToolContext) -> dict[str, Any]:
    record("unhold", seat, -1, ctx.idempotency_key)
    return {"freed": seat}


@tool(description="Notify the customer.", effect="irreversible", requires_approval=False)
def notify(to: str, text: str, *, ctx: ToolContext) -> dict[str, Any]:
    record("notify", to, 0, ctx.idempotency_key)
    return {"sent": to}


# models and agents


def tool_messages(messages: Sequence[Message], call_id: str) -> list[dict[str, Any]]:
    """The parsed tool results for one call id."""
    return [json.loads(m.content) for m in messages if m.tool_call_id == call_id]


def wire_agent(
    replies: Sequence[Entry | Callable[[Sequence[Message]], Entry]] | None = None,
    *,
    name: str = "wire-agent",
    on_failure: Any = "stop",
) -> Agent:
    """An agent that wires money (needs approval); by default one call, then an answer."""
    script = replies or [tool_call("wire_money", {"account": "ACME", "amount_cents": 500}), "ok"]
    return Agent(
        name,
        model=ScriptedModel(list(script)),
        tools=[wire_money, quote, reserve, release, notify],
        on_failure=on_failure,
    )


def stock_agent(
    items: Sequence[str],
    *,
    name: str = "stock",
    tools: Sequence[Any] = (reserve, release, hold, unhold),
    then: Sequence[Entry] = ("all reserved",),
    on_failure: Any = "stop",
) -> Agent:
    """Reserves each item (one step each), holds seat 1A, then follows `then`."""
    script: list[Entry] = [
        tool_call("reserve", {"item": item, "amount": 10 * (i + 1)}) for i, item in enumerate(items)
    ]
    script.append(tool_call("hold", {"seat": "1A"}))
    script.extend(then)
    return Agent(name, model=ScriptedModel(script), tools=list(tools), on_failure=on_failure)


async def refund_run(rt: Runtime) -> str:
    """A run of the example refund agent, done: looked up (step 1), refunded (2, approved),
    charged (3), e-mailed (4), answered (5)."""
    run_id = await rt.start("refund-agent", "Refund order 1001", requested_by=REQUESTER)
    (approval,) = await rt.approvals(run_id)
    await rt.decide(approval.id, "approved", by=APPROVER)
    assert (await rt.get(run_id)).status == RunStatus.DONE
    return run_id


async def history_around_rollback(
    rt: Runtime, run_id: str, *, to_step: int
) -> tuple[list[Checkpoint], list[Checkpoint]]:
    """The run's history just before and just after rolling it back to `to_step`."""
    before = await rt.history(run_id)
    await rt.rollback(run_id, to_step=to_step)
    return before, await rt.history(run_id)
