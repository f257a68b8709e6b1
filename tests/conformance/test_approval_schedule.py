"""Approvals over time: what is due, reminders and deadlines by compare-and-set, delivery."""

from __future__ import annotations

from collections.abc import Awaitable
from collections.abc import Callable
from datetime import datetime
from datetime import timedelta

import pytest

from store import Approval
from store import ApprovalState
from store import Delivery
from store import Run
from store import Store
from store.base import Ruling

from .builders import Clock
from .builders import MakeApproval

Create = Callable[..., Awaitable[Approval]]

HOUR = timedelta(hours=1)


@pytest.fixture
def create(store: Store, run: Run, make_approval: MakeApproval) -> Create:
    """Create a pending approval of the run, written to the store."""

    async def create(**fields: object) -> Approval:
        approval = make_approval(run.id, **fields)
        await store.create_approval(approval)
        return approval

    return create


# due approvals


async def test_due_approvals_are_pending_with_a_passed_deadline_or_reminder(
    store: Store, create: Create, clock: Clock
) -> None:
    now = clock()
    past_deadline = await create(deadline=now - HOUR)
    past_reminder = await create(deadline=now + HOUR, next_reminder_at=now)
    both = await create(deadline=now - HOUR, next_reminder_at=now - HOUR)
    await create(deadline=now + HOUR, next_reminder_at=now + HOUR / 2)  # not yet
    await create()  # never due
    decided = await create(deadline=now - HOUR)
    await store.decide_approval(decided.id, Ruling(ApprovalState.APPROVED, by="U1", at=now))

    due = await store.due_approvals()

    assert sorted(a.id for a in due) == sorted([past_deadline.id, past_reminder.id, both.id])


async def test_due_approvals_respects_limit(store: Store, create: Create, clock: Clock) -> None:
    for _ in range(3):
        await create(deadline=clock() - HOUR)

    assert len(await store.due_approvals(limit=2)) == 2


async def test_next_due_at_is_the_earliest_pending_deadline_or_reminder(
    store: Store, create: Create, clock: Clock
) -> None:
    now = clock()
    await create(deadline=now + 3 * HOUR, next_reminder_at=now + 2 * HOUR)
    await create(deadline=now + HOUR * 1.5)
    decided = await create(deadline=now + HOUR / 2)
    await store.decide_approval(decided.id, Ruling(ApprovalState.DECLINED, by="U1", at=now))

    assert await store.next_due_at() == now + HOUR * 1.5


async def test_next_due_at_is_none_when_nothing_is_scheduled(store: Store, create: Create) -> None:
    await create()

    assert await store.next_due_at() is None


# reminders and deadlines


async def reminders(store: Store, approval_id: str) -> tuple[int, datetime | None, bool]:
    """An approval's reminders as stored: how many were sent, when the next is, escalated?"""
    got = await store.get_approval(approval_id)
    return got.reminders_sent, got.next_reminder_at, got.escalated


async def test_a_reminder_that_fires_twice_is_recorded_once(
    store: Store, create: Create, clock: Clock
) -> None:
    approval = await create(deadline=clock() + 4 * HOUR, next_reminder_at=clock())
    then = clock() + HOUR

    fired = [
        await store.record_reminder(
            approval.id, reminders_sent=1, next_reminder_at=then, escalated=False
        )
        for _ in range(2)
    ]

    assert fired == [True, False]
    assert await reminders(store, approval.id) == (1, then, False)


async def test_the_next_reminder_is_recorded_after_the_first(
    store: Store, create: Create, clock: Clock
) -> None:
    approval = await create(next_reminder_at=clock())
    await store.record_reminder(
        approval.id, reminders_sent=1, next_reminder_at=clock() + HOUR, escalated=False
    )

    assert await store.record_reminder(
        approval.id, reminders_sent=2, next_reminder_at=None, escalated=True
    )

    assert await reminders(store, approval.id) == (2, None, True)


async def test_no_reminder_is_recorded_for_a_decided_approval(
    store: Store, create: Create, clock: Clock
) -> None:
    approval = await create(next_reminder_at=clock())
    await store.decide_approval(approval.id, Ruling(ApprovalState.APPROVED, by="U1", at=clock()))

    assert not await store.record_reminder(
        approval.id, reminders_sent=1, next_reminder_at=None, escalated=False
    )
    assert (await store.get_approval(approval.id)).reminders_sent == 0


async def test_extend_deadline_moves_it_once(store: Store, create: Create, clock: Clock) -> None:
    first = clock() + HOUR
    approval = await create(deadline=first)

    moved = [
        await store.extend_deadline(approval.id, deadline=first + HOUR * k, expected=first)
        for k in (1, 2)
    ]

    assert moved == [True, False]
    got = await store.get_approval(approval.id)
    assert (got.deadline, got.escalated) == (first + HOUR, True)


async def test_extend_deadline_of_an_approval_without_one(
    store: Store, create: Create, clock: Clock
) -> None:
    approval = await create()

    assert await store.extend_deadline(approval.id, deadline=clock() + HOUR, expected=None)

    assert (await store.get_approval(approval.id)).deadline == clock() + HOUR


async def test_extend_deadline_of_a_decided_approval_is_refused(
    store: Store, create: Create, clock: Clock
) -> None:
    approval = await create(deadline=clock())
    await store.decide_approval(
        approval.id, Ruling(ApprovalState.DECLINED, by="timeout", at=clock())
    )

    assert not await store.extend_deadline(approval.id, deadline=clock() + HOUR, expected=clock())

    assert (await store.get_approval(approval.id)).deadline == clock()


# where the approval was posted, and its callback


async def test_set_approval_message_records_where_it_was_posted(
    store: Store, create: Create
) -> None:
    approval = await create()

    await store.set_approval_message(
        approval.id, channel="C42", ts="1700000000.1", delivery="delivered"
    )

    got = await store.get_approval(approval.id)
    assert (got.channel, got.message_ts, got.delivery) == (
        "C42",
        "1700000000.1",
        Delivery.DELIVERED,
    )


async def test_a_message_learnt_from_a_click_is_kept_only_where_none_is_recorded(
    store: Store, create: Create
) -> None:
    unnamed, posted = await create(), await create()
    await store.set_approval_message(posted.id, channel="C1", ts="1.5", delivery="delivered")

    assert await store.adopt_message("approval", unnamed.id, channel="C1", ts="2.5")
    assert not await store.adopt_message("approval", posted.id, channel="C1", ts="9.5")
    assert not await store.adopt_message("approval", "nope", channel="C1", ts="2.5")
    with pytest.raises(ValueError, match="approval"):
        await store.adopt_message("run", unnamed.id, channel="C1", ts="2.5")

    got = {a.id: (a.channel, a.message_ts, a.delivery) for a in await store.list_approvals()}
    assert got[unnamed.id] == ("C1", "2.5", Delivery.DELIVERED)
    assert got[posted.id] == ("C1", "1.5", Delivery.DELIVERED)


async def test_an_unknown_delivery_status_is_refused_and_changes_nothing(
    store: Store, create: Create
) -> None:
    approval = await create()

    with pytest.raises(ValueError, match="posted"):
        await store.set_approval_message(approval.id, channel="C1", ts="1.0", delivery="posted")
    with pytest.raises(ValueError, match="sent"):
        await store.set_callback_status(approval.id, "sent")

    assert await store.list_approvals() == [approval]


async def test_undelivered_callbacks_are_decided_approvals_not_yet_called_back(
    store: Store, create: Create, clock: Clock
) -> None:
    url = "https://agents.example.test/decided"
    waiting = await create(callback_url=url, callback_status=Delivery.PENDING)
    await create(callback_url=url, callback_status=Delivery.PENDING)  # not decided yet
    await create()  # no callback
    await store.decide_approval(waiting.id, Ruling(ApprovalState.APPROVED, by="U1", at=clock()))

    assert [a.id for a in await store.undelivered_callbacks()] == [waiting.id]

    await store.set_callback_status(waiting.id, "delivered")

    assert await store.undelivered_callbacks() == []
    assert (await store.get_approval(waiting.id)).callback_status == Delivery.DELIVERED
