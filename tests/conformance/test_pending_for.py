"""A person's pending approvals are selected and counted in the store by who their authority
names (issue 40.4): the person, a user group of theirs, or anyone; longest-waiting first,
at any backlog of other people's; on every backend."""

from __future__ import annotations

from collections.abc import Awaitable
from collections.abc import Callable
from typing import Any

import pytest

from store import ApprovalState
from store import AuditEvent
from store import Store
from store.base import Ruling
from store.records import Authority

from .builders import Clock
from .builders import MakeApproval

ME, OTHER, GROUP = "U0ME", "U0OTHER", "S0FINANCE"


def asked(**settings: Any) -> Authority:
    return Authority.of("issue_refund", settings)


Ask = Callable[..., Awaitable[str]]


@pytest.fixture
def ask(store: Store, make_approval: MakeApproval, clock: Clock) -> Ask:
    """Write a pending approval with `fields`, asked a second after the one before: its id."""

    async def write(**fields: Any) -> str:
        clock.advance(seconds=1)
        approval = make_approval(**fields)
        await store.create_approval(approval)
        return approval.id

    return write


async def test_mine_come_first_behind_any_backlog_of_others(store: Store, ask: Ask) -> None:
    for _ in range(600):  # older, for another approver
        await ask(authority=asked(approvers=[OTHER]))
    mine = [await ask(authority=asked(approvers=[OTHER, ME])) for _ in range(5)]
    page = await store.pending_for(ME, limit=3)
    assert [a.id for a in page.approvals] == mine[:3]  # longest-waiting first
    assert page.waiting == 5
    rest = await store.pending_for(ME, after=_cursor(page.approvals[-1]), limit=3)
    assert [a.id for a in rest.approvals] == mine[3:]
    assert rest.waiting == 2
    assert (await store.pending_for("U0NOBODY")).waiting == 0


async def test_groups_anyone_escalation_and_self_approval(store: Store, ask: Ask) -> None:
    group = await ask(authority=asked(approvers=[GROUP]))
    anyone = await ask(authority=asked(approvers=[]))
    escalated = await ask(
        authority=asked(approvers=[OTHER], escalate_to=ME),
        escalated=True,
    )
    later = await ask(authority=asked(approvers=[OTHER], escalate_to=ME))
    await ask(authority=asked(approvers=[ME]), requested_by=ME)
    own_ok = await ask(
        authority=asked(approvers=[ME], allow_self_approval=True),
        requested_by=ME,
    )
    assert await store.decider_groups() == [GROUP]
    without = await store.pending_for(ME)
    assert [a.id for a in without.approvals] == [anyone, escalated, own_ok]
    with_group = await store.pending_for(ME, groups=[GROUP])
    assert [a.id for a in with_group.approvals] == [group, anyone, escalated, own_ok]
    assert with_group.waiting == 4

    assert await store.extend_deadline(later, deadline=None, expected=None)  # it escalates
    after = await store.pending_for(ME)
    assert [a.id for a in after.approvals] == [anyone, escalated, later, own_ok]


async def test_decided_leave_and_filled_in_arrive(store: Store, ask: Ask, clock: Clock) -> None:
    decided = await ask(authority=asked(approvers=[ME]))
    old = await ask()  # asked before approvals carried authority
    kept = await ask(authority=asked(approvers=[ME]))
    await store.decide_approval(decided, Ruling(ApprovalState.APPROVED, by=ME, at=clock()))
    assert [a.id for a in (await store.pending_for(ME)).approvals] == [kept]

    event = AuditEvent(action="authority_filled", actor="signoff", approval_id=old, at=clock())
    assert await store.fill_authority(old, asked(approvers=[ME]), event=event)
    assert [a.id for a in (await store.pending_for(ME)).approvals] == [old, kept]


def _cursor(approval: Any) -> tuple[Any, str]:
    return approval.created_at, approval.id
