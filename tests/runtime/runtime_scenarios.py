"""Agents and helpers shared by the runtime tests and the worker processes they kill.

The tests import it as `runtime_scenarios` (pytest puts `tests/runtime` on the path); a
worker (`workers/drive.py`) imports it the same way, started with `tests/runtime` on
PYTHONPATH (a unique name, so it never shadows the real `runtime` package).

A tool or model dies with SIGKILL at the point named by the `SIGNOFF_TEST_DIE` environment
variable, which only the worker processes set, so the same agents run to completion in the
test process.
"""

from __future__ import annotations

import asyncio
import os
import signal
from collections.abc import Awaitable
from collections.abc import Callable
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any
from typing import Protocol

from examples import refund_agent
from examples import world
from runtime import Agent
from runtime import Budget
from runtime import Model
from runtime import Reply
from runtime import ScriptedModel
from runtime import Tool
from runtime import ToolContext
from runtime import tool
from runtime import tool_call
from runtime.model import Entry
from runtime.tools import ToolSpec
from store import Approval
from store import Message
from store import Page
from store import Run
from store import Store

DIE = "SIGNOFF_TEST_DIE"
WORKER_ID = "doomed-worker"
INVOICE = "INV-7"
CUSTOMER = "ada@example.com"


OpenDb = Callable[[], Awaitable[Store]]
"""The `open_db` fixture: the test's database file on a new connection."""


@dataclass(frozen=True)
class Exit:
    """How a worker process ended."""

    returncode: int
    stdout: str
    stderr: str

    @property
    def killed(self) -> bool:
        return self.returncode == -9


Worker = Callable[..., Exit]
"""The `run_worker` fixture."""

DEAD_LEASE_TTL = 1.5
"""The lease a worker process takes (seconds): the database's clock, not a test's, says when
a killed worker's lease has lapsed, so a successor waits this long (`wait_for_lapse`)."""


async def wait_for_lapse(store: Store, *, owner: str = "successor") -> None:
    """Sleep until every lease another worker holds on a run has lapsed (by the database's
    clock, which is the one that decides)."""
    now = await store.database_now()
    held = [
        run.lease_expires_at
        for run in await store.list_runs()
        if run.lease_expires_at is not None and run.lease_owner != owner
    ]
    if held and max(held) > now:
        await asyncio.sleep((max(held) - now).total_seconds() + 0.05)


class MovableClock(Protocol):
    """The `clock` fixture of tests/conftest.py."""

    def __call__(self) -> datetime: ...
    def advance(self, **delta: float) -> datetime: ...


def die_here(point: str) -> None:
    """SIGKILL this process if the environment names this point."""
    if os.environ.get(DIE) == point:
        os.kill(os.getpid(), signal.SIGKILL)


def turn_of(messages: Sequence[Message]) -> int:
    """How many assistant turns the transcript already has."""
    return sum(1 for m in messages if m.role == "assistant")


# models


class CountingModel:
    """Delegates to a model and counts the calls that reached it."""

    def __init__(self, inner: Model) -> None:
        self.inner = inner
        self.calls = 0

    async def complete(self, messages: Sequence[Message], tools: Sequence[ToolSpec]) -> Reply:
        self.calls += 1
        return await self.inner.complete(messages, tools)


class FlakyModel:
    """Raises the given exceptions, one per call, then delegates."""

    def __init__(self, inner: Model, failures: Sequence[Exception]) -> None:
        self.inner = inner
        self.failures = list(failures)
        self.calls = 0

    async def complete(self, messages: Sequence[Message], tools: Sequence[ToolSpec]) -> Reply:
        self.calls += 1
        if self.failures:
            raise self.failures.pop(0)
        return await self.inner.complete(messages, tools)


class GatedModel:
    """Delegates, but waits at one turn until the test opens the gate."""

    def __init__(self, inner: Model, *, at_turn: int) -> None:
        self.inner = inner
        self.at_turn = at_turn
        self.waiting = asyncio.Event()
        self.gate = asyncio.Event()
        self.calls = 0

    async def complete(self, messages: Sequence[Message], tools: Sequence[ToolSpec]) -> Reply:
        self.calls += 1
        if turn_of(messages) == self.at_turn:
            self.waiting.set()
            await self.gate.wait()
        return await self.inner.complete(messages, tools)


class RecordingModel:
    """Delegates, and keeps a copy of every transcript it was shown."""

    def __init__(self, inner: Model) -> None:
        self.inner = inner
        self.seen: list[list[Message]] = []

    async def complete(self, messages: Sequence[Message], tools: Sequence[ToolSpec]) -> Reply:
        self.seen.append(list(messages))
        return await self.inner.complete(messages, tools)


class RecordingNotifier:
    """A Notifier that remembers what it was told."""

    def __init__(self) -> None:
        self.pages: list[Page] = []
        self.finished: list[Run] = []
        self.approvals: list[Approval] = []

    async def approval_requested(self, approval: Approval, run: Run | None) -> None:
        self.approvals.append(approval)

    async def approval_decided(self, approval: Approval, run: Run | None) -> None:
        return None

    async def reminder_due(self, approval: Approval, run: Run | None, *, escalated: bool) -> None:
        return None

    async def effect_needs_human(self, page: Page, run: Run | None) -> None:
        self.pages.append(page)

    async def run_finished(self, run: Run) -> None:
        self.finished.append(run)


# the counter: one read tool per step, forever (budget tests)


@tool(description="Count one step.", effect="read", timeout=10)
def tick(n: int, *, ctx: ToolContext) -> dict[str, int]:
    die_here(f"tick@{ctx.step}")
    return {"n": n, "step": ctx.step}


def counting_policy(messages: Sequence[Message]) -> Entry:
    return tool_call("tick", {"n": turn_of(messages) + 1})


def counter_agent(model: Model | None = None) -> Agent:
    return Agent(
        "counter",
        model=model or ScriptedModel(counting_policy),
        tools=[tick],
        system_prompt="Count.",
        budget=Budget(max_steps=8),
    )


# the stamper: three calls in one reply, then one more (transcript tests)


@tool(description="Stamp a label.", effect="read", timeout=10)
def stamp(label: str) -> str:
    die_here(f"stamp:{label}")
    return f"stamped {label}"


STAMPER_SCRIPT: list[Entry] = [
    [tool_call("stamp", {"label": label}) for label in "abc"],
    tool_call("stamp", {"label": "d"}),
    "Stamped a, b, c and d.",
]


def stamper_agent(model: Model | None = None) -> Agent:
    return Agent(
        "stamper",
        model=model or ScriptedModel(STAMPER_SCRIPT),
        tools=[stamp],
        system_prompt="Stamp everything.",
    )


# the biller: charges an invoice (idempotent), then e-mails (not idempotent), then answers


@tool(
    description="Charge an invoice.",
    effect="irreversible",
    requires_approval=False,
    idempotent=True,
    timeout=10,
    idempotency_key=lambda args: args["invoice_id"],
)
def charge(invoice_id: str, amount_cents: int, *, ctx: ToolContext) -> dict[str, Any]:
    receipt = world.pay("charge", invoice_id, amount_cents, ctx.idempotency_key)
    die_here("charge")
    return receipt


@tool(description="E-mail someone.", effect="irreversible", requires_approval=False, timeout=10)
def send_email(to: str, subject: str, *, ctx: ToolContext) -> dict[str, Any]:
    sent = world.send(to, subject, ctx.idempotency_key)
    die_here("send_email")
    return sent


BILLER_SCRIPT: list[Entry] = [
    tool_call("charge", {"invoice_id": INVOICE, "amount_cents": 500}),
    tool_call("send_email", {"to": CUSTOMER, "subject": "Your receipt"}),
    "Charged INV-7 and sent the receipt.",
]


def biller_agent(model: Model | None = None) -> Agent:
    return Agent(
        "biller",
        model=model or ScriptedModel(BILLER_SCRIPT),
        tools=[charge, send_email],
        system_prompt="Bill the customer.",
    )


# the refund policy of examples/refund_agent.py, with the refund approved up front


def dying_policy(messages: Sequence[Message]) -> Entry:
    die_here(f"model@{turn_of(messages) + 1}")
    return refund_agent.policy(messages)


def refunder_agent(model: Model | None = None) -> Agent:
    preapproved_refund = Tool(
        refund_agent.issue_refund.fn,
        name="issue_refund",
        description="Refund an order.",
        effect="reversible",
        compensate="reverse_refund",
        requires_approval=False,
        timeout=30,
    )
    return Agent(
        "refunder",
        model=model or ScriptedModel(dying_policy),
        tools=[
            refund_agent.lookup_order,
            preapproved_refund,
            refund_agent.reverse_refund,
            refund_agent.charge,
            refund_agent.send_email,
        ],
        system_prompt=refund_agent.agent.system_prompt,
        budget=Budget(max_steps=12),
    )


AGENTS: dict[str, Callable[[], Agent]] = {
    "counter": counter_agent,
    "biller": biller_agent,
    "stamper": stamper_agent,
    "refunder": refunder_agent,
}


def order_with_fee() -> str:
    """An order id whose refund also charges a restocking fee (every tool gets used)."""
    return next(
        str(n) for n in range(4471, 4571) if world.order(str(n))["restocking_fee_cents"] > 0
    )


def assert_well_formed(messages: Sequence[Message], *, settled: bool = True) -> None:
    """One system message first, then the task; each tool result answers the latest assistant
    turn's calls, each call is answered exactly once, no turn starts with calls open, and
    (if `settled`) no call is left open at the end."""
    roles = [m.role for m in messages]
    assert roles.count("system") <= 1, roles
    if "system" in roles:
        assert roles[0] == "system", roles
    first = 1 if "system" in roles else 0
    assert roles[first] == "user", roles
    assert roles.count("user") == 1, roles
    open_calls: list[str] = []
    answered: set[str] = set()
    for m in messages[first + 1 :]:
        if m.role == "assistant":
            assert not open_calls, f"calls {open_calls} were never answered"
            open_calls = [c.id for c in m.tool_calls]
            assert len(set(open_calls)) == len(open_calls), open_calls
        elif m.role == "tool":
            assert m.tool_call_id in open_calls, f"{m.tool_call_id} answers no open call"
            assert m.tool_call_id not in answered, f"{m.tool_call_id} answered twice"
            open_calls.remove(m.tool_call_id)
            answered.add(m.tool_call_id)
        else:
            raise AssertionError(f"unexpected {m.role} message in the middle: {roles}")
    if settled:
        assert not open_calls, f"calls {open_calls} were never answered"
