"""Callers that leave are let go (issue 40.5), in the runtime on both backends: only the token
that asked withdraws its approval (once; a decision after it changes nothing), and a
waiter's heartbeat that lapses leaves the approval saying nobody waits for its answer, until
someone waits again; each change leaves an outbox row for the card."""

from __future__ import annotations

from datetime import UTC
from datetime import datetime
from datetime import timedelta
from pathlib import Path

import pytest

from bot import words
from examples.refund_agent import agent as refund_agent
from runtime import Runtime
from runtime import errors
from store import Approval
from store import ApprovalState
from store import Store
from tests.conftest import Clock

AGENT, OTHER = "token:refund-agent", "token:someone-else"


async def ask(rt: Runtime, approval_id: str = "a1", token: str | None = AGENT) -> Approval:
    approval, created = await rt.request_approval(
        "wire", {"n": 1}, approval_id=approval_id, requester_token=token
    )
    assert created
    return approval


async def sent_rows(store: Store) -> list[tuple[str, str]]:
    """Every outbox row not yet sent, claimed and marked sent, in order."""
    later = datetime.now(UTC) + timedelta(days=400)
    rows: list[tuple[str, str]] = []
    while items := await store.claim_outbox("w", now=later, until=later, limit=100):
        for item in items:
            await store.finish_outbox(item.id, "w", at=later)
            rows.append((item.topic, item.subject_id))
    return rows


@pytest.fixture
def rt(store: Store) -> Runtime:
    return Runtime(store, worker_id="askers")


def clocked(store: Store, clock: Clock) -> Runtime:
    """A runtime on the test's clock, a second ahead of now: PostgreSQL dates outbox rows
    by its own, and they must be due by this one."""
    clock.now = datetime.now(UTC) + timedelta(seconds=1)
    return Runtime(store, worker_id="askers", clock=clock)


async def test_only_the_token_that_asked_withdraws_and_a_later_decision_changes_nothing(
    rt: Runtime, store: Store
) -> None:
    await ask(rt)
    await ask(rt, "by-a-run", token=None)  # what no token asked, no token withdraws
    await sent_rows(store)

    with pytest.raises(errors.NotTheAsker, match="only the token that asked"):
        await rt.withdraw_approval("a1", by=OTHER, reason=words.AGENT_STOPPED_WAITING)
    with pytest.raises(errors.NotTheAsker):
        await rt.withdraw_approval("by-a-run", by=AGENT, reason=words.AGENT_STOPPED_WAITING)
    assert (await rt.queries.approval("a1")).state == ApprovalState.PENDING
    assert await sent_rows(store) == []

    withdrawn, changed = await rt.withdraw_approval(
        "a1", by=AGENT, reason=words.AGENT_STOPPED_WAITING
    )
    again, changed_again = await rt.withdraw_approval(
        "a1", by=AGENT, reason=words.AGENT_STOPPED_WAITING
    )
    assert (changed, changed_again) == (True, False)
    assert withdrawn.withdrawn
    assert again == withdrawn
    assert withdrawn.reason == "withdrawn: the agent stopped waiting"
    assert words.approval_state(withdrawn) == words.WITHDRAWN
    assert await sent_rows(store) == [("approval_decided", "a1")]  # the card, once

    with pytest.raises(errors.AlreadyDecided) as refused:
        await rt.decide("a1", "approved", by="U0BOSS")
    assert words.refusal(refused.value).startswith("This approval was withdrawn at ")
    assert "(the agent stopped waiting); there is nothing to decide." in words.refusal(
        refused.value
    )
    assert await rt.queries.approval("a1") == withdrawn
    assert await sent_rows(store) == []


async def test_a_decided_approval_is_not_withdrawn(rt: Runtime) -> None:
    await ask(rt)
    approved = await rt.decide("a1", "approved", by="U0BOSS")
    with pytest.raises(errors.AlreadyDecided, match="already approved by U0BOSS"):
        await rt.withdraw_approval("a1", by=AGENT, reason=words.AGENT_STOPPED_WAITING)
    assert await rt.queries.approval("a1") == approved


async def test_a_lapsed_heartbeat_says_nobody_waits_until_someone_waits_again(
    store: Store, clock: Clock
) -> None:
    rt = clocked(store, clock)
    await ask(rt)
    await sent_rows(store)

    await rt.keep_waiting("a1", 5)  # a 5 s long poll: its heartbeat covers 5 s and 5 more
    waited = await rt.queries.approval("a1")
    assert waited.waiter_until == clock.now + timedelta(seconds=10)
    assert await store.next_due_at() == waited.waiter_until
    assert words.waiter_note(waited) is None

    clock.advance(seconds=9)
    await rt.desk.tick(clock.now)
    assert (await rt.queries.approval("a1")).waiter_left_at is None
    await rt.keep_waiting("a1", 5)  # the next long poll, in time: moved on
    clock.advance(seconds=9)
    await rt.desk.tick(clock.now)
    assert (await rt.queries.approval("a1")).waiter_left_at is None

    clock.advance(seconds=6)  # its waiter was killed: nobody asked again
    await rt.desk.tick(clock.now)
    left = await rt.queries.approval("a1")
    assert (left.waiter_until, left.waiter_left_at) == (None, clock.now)
    assert words.waiter_note(left) == "nobody is waiting for this answer now"
    assert await store.next_due_at() is None
    await rt.desk.tick(clock.now)  # told once
    assert await sent_rows(store) == [("approval_waiting", "a1")]

    await rt.keep_waiting("a1", 1)  # the same call is asked again: someone waits
    back = await rt.queries.approval("a1")
    assert (back.waiter_left_at, back.waiter_until) == (None, clock.now + timedelta(seconds=3))
    assert words.waiter_note(back) is None
    await rt.keep_waiting("a1", 1)  # still there: the card need not change
    assert await sent_rows(store) == [("approval_waiting", "a1")]


async def test_an_approval_decided_while_nobody_waits_says_it_runs_only_if_asked_again(
    store: Store, clock: Clock
) -> None:
    rt = clocked(store, clock)
    await ask(rt)
    await rt.keep_waiting("a1", 1)
    clock.advance(seconds=4)
    await rt.desk.tick(clock.now)
    clock.advance(seconds=60)
    approved = await rt.decide("a1", "approved", by="U0BOSS")
    assert words.waiter_note(approved) == (
        "nobody was waiting for this answer: the call runs only if it is asked again"
    )
    await rt.keep_waiting("a1", 1)  # decided: no heartbeat is kept
    assert (await rt.queries.approval("a1")).waiter_until is None


async def test_a_runs_approval_keeps_no_heartbeat_for_its_run_waits(
    store: Store, world: Path
) -> None:
    rt = Runtime(store, [refund_agent], worker_id="askers")
    run_id = await rt.start("refund-agent", "Refund order 4471")
    [approval] = await rt.approvals(run_id)
    await rt.keep_waiting(approval.id, 1)  # a page that long-polls a run's approval
    assert (await rt.queries.approval(approval.id)).waiter_until is None
