"""Deadlines, withdrawals, sagas and resumes: what a run may still do after each."""

from __future__ import annotations

from collections.abc import Callable
from datetime import timedelta

import pytest

from runtime import Agent
from runtime import Budget
from runtime import Policies
from runtime import Policy
from runtime import Runtime
from runtime import ScriptedModel
from runtime import tool
from runtime import tool_call
from runtime.errors import ApprovalExpired
from runtime.errors import InvalidRequest
from runtime.errors import RunBusy
from store import ApprovalState
from store import Store

DONE: list[str] = []


@pytest.fixture(autouse=True)
def fresh_ledger() -> None:
    DONE.clear()


@tool(description="Send money.", effect="irreversible")
async def send(cents: int) -> str:
    DONE.append(f"send {cents}")
    return "sent"


@tool(description="Book a room.", effect="reversible", compensate="unbook", requires_approval=False)
async def book(room: str) -> str:
    DONE.append(f"book {room}")
    return "booked"


@tool(
    description="Cancel a booking.", effect="reversible", compensate="book", requires_approval=False
)
async def unbook(room: str) -> str:
    DONE.append(f"unbook {room}")
    return "unbooked"


@tool(description="Hang.", effect="irreversible", requires_approval=False, timeout=0.05)
async def hang(room: str) -> str:
    import asyncio

    await asyncio.sleep(1)
    return "never"


def sender() -> Agent:
    return Agent(
        "sender", model=ScriptedModel([tool_call("send", {"cents": 5}), "done"]), tools=[send]
    )


async def test_a_decision_after_the_deadline_is_refused_and_nothing_runs(
    store: Store, clock: Callable[..., object]
) -> None:
    policies = Policies(default=Policy(timeout=timedelta(hours=1)))
    rt = Runtime(store, [sender()], policies=policies, clock=clock, worker_id="w")  # type: ignore[arg-type]
    run_id = await rt.start("sender", "pay", requested_by="U0REQ")
    [approval] = await rt.approvals(run_id)
    clock.advance(hours=2)  # type: ignore[attr-defined]

    with pytest.raises(ApprovalExpired):
        await rt.decide(approval.id, "approved", by="U0BOSS")

    decided = await rt.desk.get(approval.id)
    assert (decided.state, decided.reason) == (ApprovalState.DECLINED, "expired")
    assert DONE == []


async def test_a_withdrawn_approval_does_not_decline_the_call_for_the_lineage(
    store: Store,
) -> None:
    rt = Runtime(store, [sender()], worker_id="w")
    run_id = await rt.start("sender", "pay", requested_by="U0REQ")
    await rt.cancel(run_id, by="U0OPS", reason="wrong customer")
    [withdrawn] = await rt.approvals(run_id)
    assert withdrawn.state == ApprovalState.DECLINED
    assert withdrawn.reason == "withdrawn: run cancelled (wrong customer) by U0OPS"

    fork_id = await rt.fork(run_id, from_step=0)

    [asked_again] = await rt.approvals(fork_id)
    assert asked_again.state == ApprovalState.PENDING
    await rt.decide(asked_again.id, "approved", by="U0BOSS")
    assert DONE == ["send 5"]


async def test_a_saga_run_that_stops_in_doubt_is_not_compensated(store: Store) -> None:
    script = [tool_call("book", {"room": "101"}), tool_call("hang", {"room": "101"}), "done"]
    agent = Agent(
        "saga", model=ScriptedModel(script), tools=[book, unbook, hang], on_failure="compensate"
    )
    rt = Runtime(store, [agent], worker_id="w")

    run_id = await rt.start("saga", "book")

    assert (await rt.get(run_id)).stop_reason == "in_doubt"
    assert DONE == ["book 101"]


async def test_a_compensated_saga_run_cannot_be_resumed(store: Store) -> None:
    agent = Agent(
        "saga",
        model=ScriptedModel([tool_call("book", {"room": "7"}), "done"]),
        tools=[book, unbook],
        on_failure="compensate",
    )
    rt = Runtime(store, [agent], worker_id="w")
    run, _ = await rt.create("saga", "book")
    await rt.cancel(run.id)

    with pytest.raises(InvalidRequest, match="fork it"):
        await rt.resume(run.id)


async def test_a_refused_resume_leaves_the_budget_as_it_was(store: Store) -> None:
    rt = Runtime(store, [sender()], worker_id="w")
    run, _ = await rt.create("sender", "pay", budget=Budget(max_steps=1))
    now = rt.clock()
    assert await store.acquire_lease(run.id, "other", until=now + timedelta(minutes=5), now=now)

    with pytest.raises(RunBusy):
        await rt.resume(run.id, budget=Budget(max_steps=500))

    assert (await rt.get(run.id)).budget.max_steps == 1


async def test_steps_that_write_nothing_keep_their_own_checkpoints(store: Store) -> None:
    @tool(description="Look.", effect="read")
    async def look(order: str) -> str:
        return f"order {order}"

    script = [tool_call("look", {"order": "1"}), tool_call("look", {"order": 2}), "done"]
    rt = Runtime(store, [Agent("l", model=ScriptedModel(script), tools=[look])], worker_id="w")
    run_id = await rt.start("l", "look twice")

    first = await rt.state_at(run_id, 1)

    assert first.pending_calls == ()
    assert [m.role for m in first.messages][-2:] == ["assistant", "tool"]


async def test_a_run_stopped_by_its_budget_can_be_cancelled_for_good(store: Store) -> None:
    rt = Runtime(store, [sender()], worker_id="w")
    run, _ = await rt.create("sender", "pay", budget=Budget(max_steps=0))
    await rt.drive(run.id)
    assert (await rt.get(run.id)).stop_reason == "step_budget"

    cancelled = await rt.cancel(run.id, by="U0OPS")

    assert (cancelled.status, cancelled.stop_reason) == ("cancelled", "cancelled")
    with pytest.raises(InvalidRequest, match="fork it"):
        await rt.resume(run.id, budget=Budget(max_steps=5))
