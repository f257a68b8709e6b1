"""The outbox: every change a person must hear about leaves a row in the same transaction,
and rows go out in order per subject, once, to one sender at a time."""

from __future__ import annotations

import asyncio
from datetime import UTC
from datetime import datetime
from datetime import timedelta

import pytest

from store import ApprovalState
from store import Batch
from store import PageSettlement
from store import Run
from store import RunStatus
from store import Store
from store import errors
from store.base import Ruling

from .builders import Append
from .builders import MakeApproval
from .builders import MakePage
from .builders import checkpoint


def later(seconds: float = 60) -> datetime:
    return datetime.now(UTC) + timedelta(seconds=seconds)


async def claim_all(store: Store, owner: str = "w1") -> list[tuple[str, str]]:
    items = await store.claim_outbox(owner, now=later(), until=later(120), limit=100)
    return [(item.topic, item.subject_id) for item in items]


async def drain(store: Store, owner: str = "w1") -> list[tuple[str, str]]:
    """Claim and mark sent until nothing is left; what went out, in order."""
    sent: list[tuple[str, str]] = []
    while items := await store.claim_outbox(owner, now=later(), until=later(120), limit=100):
        for item in items:
            assert await store.finish_outbox(item.id, owner, at=later())
            sent.append((item.topic, item.subject_id))
    return sent


async def test_a_requested_approval_leaves_a_row_in_its_own_commit(
    store: Store, run: Run, make_approval: MakeApproval
) -> None:
    approval = make_approval(run.id)

    await store.commit(Batch(run_id=run.id, request=[approval]))

    assert await claim_all(store) == [("approval_requested", approval.id)]


async def test_a_decision_a_vote_and_a_reminder_each_leave_a_row(
    store: Store, run: Run, make_approval: MakeApproval
) -> None:
    approval = make_approval(run.id, required_approvals=2)
    await store.create_approval(approval)
    await store.cast_vote(approval.id, Ruling(ApprovalState.APPROVED, by="U0ANN", at=later()))
    await store.record_reminder(
        approval.id, reminders_sent=1, next_reminder_at=later(600), escalated=True
    )
    await store.decide_approval(approval.id, Ruling(ApprovalState.APPROVED, by="U0BOB", at=later()))

    assert await drain(store) == [
        ("approval_requested", approval.id),
        ("approval_voted", approval.id),
        ("approval_reminded", approval.id),
        ("approval_decided", approval.id),
    ]


async def test_a_reminder_row_says_whether_it_escalated(
    store: Store, run: Run, make_approval: MakeApproval
) -> None:
    approval = make_approval(run.id, deadline=later(-1))
    await store.create_approval(approval)
    await store.record_reminder(
        approval.id, reminders_sent=1, next_reminder_at=later(600), escalated=False
    )
    stored = await store.get_approval(approval.id)  # the store rebases it on its own clock
    await store.extend_deadline(approval.id, deadline=None, expected=stored.deadline)

    details = []
    while items := await store.claim_outbox("w1", now=later(), until=later(120), limit=10):
        for item in items:
            await store.finish_outbox(item.id, "w1", at=later())
            details.append(item.detail)

    assert details[1:] == [
        {"reminders_sent": 1, "escalated": False},
        {"reminders_sent": 1, "escalated": True},
    ]


async def test_a_failed_compare_and_set_leaves_no_row(
    store: Store, run: Run, make_approval: MakeApproval
) -> None:
    approval = make_approval(run.id)
    await store.create_approval(approval)
    await store.decide_approval(approval.id, Ruling(ApprovalState.DECLINED, by="U0BOB", at=later()))
    await drain(store)

    with pytest.raises(errors.AlreadyDecided):
        await store.decide_approval(
            approval.id, Ruling(ApprovalState.APPROVED, by="U0EVE", at=later())
        )

    assert await claim_all(store) == []


async def test_pages_and_finished_runs_leave_rows(
    store: Store, run: Run, make_page: MakePage, append: Append
) -> None:
    page = make_page(run.id)
    await store.commit(Batch(run_id=run.id, pages=[page]))
    await store.acknowledge_page(page.id, by="U0OPS", at=later())
    await append(run.id, status=RunStatus.DONE)

    sent = await drain(store)

    assert sorted(sent) == sorted(
        [("page_opened", page.id), ("page_acknowledged", page.id), ("run_finished", run.id)]
    )
    assert sent.index(("page_opened", page.id)) < sent.index(("page_acknowledged", page.id))


async def test_an_escalation_is_announced_and_audited_once(
    store: Store, run: Run, make_approval: MakeApproval
) -> None:
    approval = make_approval(run.id, deadline=later(-1))
    await store.create_approval(approval)
    await drain(store)
    stored = await store.get_approval(approval.id)  # the store rebases it on its own clock
    moved = later(3600)

    assert await store.extend_deadline(approval.id, deadline=moved, expected=stored.deadline)
    escalated = await store.claim_outbox("w1", now=later(), until=later(120), limit=10)
    assert await store.extend_deadline(approval.id, deadline=later(7200), expected=moved)

    assert [(i.topic, i.detail) for i in escalated] == [
        ("approval_reminded", {"reminders_sent": 0, "escalated": True})
    ]
    assert await claim_all(store, "w2") == []  # escalated already: the second says nothing
    events = [e for e in await store.list_events(run_id=run.id) if e.approval_id == approval.id]
    assert [e.action for e in events] == ["approval_requested", "approval_escalated"]
    assert events[1].actor == "signoff"
    assert events[1].detail == {"tool": "issue_refund", "policy": "default", "reminders_sent": 0}


async def test_settling_a_calls_pages_announces_each_page_it_acknowledged(
    store: Store, run: Run, make_page: MakePage, append: Append
) -> None:
    pages = [make_page(run.id, call_id="c1"), make_page(run.id, call_id="c1")]
    other = make_page(run.id, call_id="c2")
    await store.commit(Batch(run_id=run.id, pages=[*pages, other]))
    await drain(store)
    settle = [PageSettlement(call_id="c1", by="U0OPS", at=later())]

    await append(run.id, settle_pages=settle)
    first = await drain(store)
    await append(run.id, settle_pages=settle)

    assert sorted(first) == sorted(("page_acknowledged", p.id) for p in pages)
    assert await drain(store) == []
    opened = [e for e in await store.list_events(run_id=run.id) if e.action == "page_opened"]
    assert [e.detail["page_id"] for e in opened] == [p.id for p in (*pages, other)]


async def test_a_change_that_does_not_commit_announces_nothing(
    store: Store, run: Run, make_page: MakePage, make_approval: MakeApproval
) -> None:
    """A batch refused inside its transaction (a stale seq) leaves neither the page and the
    approval it held nor their cards and audit events."""
    latest = (await store.load_state(run.id)).seq
    page, approval = make_page(run.id), make_approval(run.id)
    batch = Batch(
        run_id=run.id,
        checkpoints=[checkpoint(run.id, latest + 2, later())],
        pages=[page],
        request=[approval],
    )

    with pytest.raises(errors.Conflict):
        await store.commit(batch)

    assert await claim_all(store) == []
    assert await store.list_events(run_id=run.id) == []


async def test_a_later_row_waits_for_an_earlier_unsent_one_of_its_subject(
    store: Store, run: Run, make_approval: MakeApproval
) -> None:
    first, other = make_approval(run.id), make_approval(run.id)
    await store.create_approval(first)
    await store.create_approval(other)
    await store.decide_approval(first.id, Ruling(ApprovalState.APPROVED, by="U0BOB", at=later()))

    claimed = await store.claim_outbox("w1", now=later(), until=later(120), limit=10)
    assert [(i.topic, i.subject_id) for i in claimed] == [
        ("approval_requested", first.id),
        ("approval_requested", other.id),
    ]
    # The card failed to post: its update may not overtake it.
    assert await store.retry_outbox(claimed[0].id, "w1", after=0, error="500")
    assert await store.finish_outbox(claimed[1].id, "w1", at=later())

    again = await store.claim_outbox("w1", now=later(), until=later(120), limit=10)
    assert [(i.topic, i.subject_id, i.attempts) for i in again] == [
        ("approval_requested", first.id, 2)
    ]


async def test_a_claimed_row_is_not_claimed_again_until_its_claim_lapses(
    store: Store, run: Run, make_approval: MakeApproval
) -> None:
    await store.create_approval(make_approval(run.id))
    now = later(0)

    mine = await store.claim_outbox("w1", now=now, until=now + timedelta(seconds=0.3))
    theirs = await store.claim_outbox("w2", now=now, until=now + timedelta(seconds=30))
    await asyncio.sleep(0.35)  # the database's clock says when a claim lapses
    lapsed = await store.claim_outbox("w2", now=later(0.35), until=now + timedelta(seconds=60))

    assert [item.attempts for item in mine] == [1]
    assert theirs == []
    # The second claim knows a first one may have delivered before its sender died.
    assert [(item.id, item.attempts) for item in lapsed] == [(mine[0].id, 2)]
    # The first sender's claim is gone: it cannot mark the row sent any more.
    assert not await store.finish_outbox(mine[0].id, "w1", at=now)
    assert await store.finish_outbox(mine[0].id, "w2", at=now)


async def test_a_row_retried_later_is_not_due_before_then(
    store: Store, run: Run, make_approval: MakeApproval
) -> None:
    await store.create_approval(make_approval(run.id))
    now = later(0)
    [item] = await store.claim_outbox("w1", now=now, until=now + timedelta(seconds=30))
    await store.retry_outbox(item.id, "w1", after=0.5, error="429")

    assert await store.claim_outbox("w1", now=later(0), until=later(90)) == []
    assert await store.outbox_backlog() == (1, item.created_at)
    await asyncio.sleep(0.55)
    due = await store.claim_outbox("w1", now=later(0), until=later(90))
    assert [(i.id, i.attempts) for i in due] == [(item.id, 2)]


async def test_open_posted_pages_are_reminded_once_per_interval(
    store: Store, run: Run, make_page: MakePage
) -> None:
    posted, unposted, handled = make_page(run.id), make_page(run.id), make_page(run.id)
    await store.commit(Batch(run_id=run.id, pages=[posted, unposted, handled]))
    for page in (posted, handled):
        await store.set_page_message(page.id, channel="C0ONCALL", ts="1.0", delivery="delivered")
    await store.acknowledge_page(handled.id, by="U0OPS", at=later())
    await drain(store)

    too_soon = await store.remind_open_pages(now=later(), before=later(-3600))
    due = await store.remind_open_pages(now=later(), before=later(120))
    again = await store.remind_open_pages(now=later(), before=later(30))

    assert (too_soon, due, again) == (0, 1, 0)
    assert await claim_all(store) == [("page_reminded", posted.id)]


async def test_a_restarted_worker_takes_back_its_own_claims_at_once(
    store: Store, run: Run, make_approval: MakeApproval
) -> None:
    await store.create_approval(make_approval(run.id))
    await store.create_approval(make_approval(run.id))
    now = later()
    mine = await store.claim_outbox("w1", now=now, until=now + timedelta(seconds=60), limit=1)
    theirs = await store.claim_outbox("w2", now=now, until=now + timedelta(seconds=60))

    assert await store.release_outbox_claims("w1") == 1

    again = await store.claim_outbox("w1", now=now, until=now + timedelta(seconds=60))
    assert [i.id for i in again] == [mine[0].id]
    assert not await store.finish_outbox(theirs[0].id, "w1", at=now)  # still w2's


async def test_a_run_that_ends_is_announced_once_with_its_status(
    store: Store, run: Run, append: Append
) -> None:
    """However the step that ends the run is written (PostgreSQL's one statement or the
    transaction body), one row says how it ended; a later checkpoint at the same status
    announces nothing."""
    await append(run.id, status=RunStatus.FAILED)
    await append(run.id, status=RunStatus.FAILED)

    items = await store.claim_outbox("w1", now=later(), until=later(120), limit=10)

    assert [(i.topic, i.subject_id, i.detail) for i in items] == [
        ("run_finished", run.id, {"status": "failed"})
    ]


async def test_rows_waiting_ahead_of_one_are_counted_by_subject(
    store: Store, run: Run, make_approval: MakeApproval, append: Append
) -> None:
    first, other = make_approval(run.id), make_approval(run.id)
    await store.create_approval(first)
    await store.create_approval(other)
    await append(run.id, status=RunStatus.DONE)
    items = await store.claim_outbox("w1", now=later(), until=later(120), limit=10)
    finished = next(i for i in items if i.topic == "run_finished")

    assert await store.outbox_waiting_before(finished.id, [first.id, other.id]) == 2
    for item in items:
        if item.subject_id == first.id:
            await store.finish_outbox(item.id, "w1", at=later())
    assert await store.outbox_waiting_before(finished.id, [first.id, other.id]) == 1
    assert await store.outbox_waiting_before(finished.id, []) == 0


async def test_home_refreshes_coalesce_to_one_waiting_row_per_person(store: Store) -> None:
    assert await store.queue_home_refresh(["home:U0BOB", "home:U0ANN", "home:U0BOB"]) == 2
    assert await store.queue_home_refresh(["home:U0BOB", "home:U0ANN"]) == 0  # one waits each
    [bob, ann] = sorted(
        await store.claim_outbox("w1", now=later(), until=later(120), limit=10),
        key=lambda i: i.subject_id,
        reverse=True,
    )
    assert (bob.topic, bob.subject_id) == ("home_stale", "home:U0BOB")
    # Bob's row is being sent (it may have read the state before this change): one more waits.
    assert await store.queue_home_refresh(["home:U0BOB"]) == 1
    assert await store.queue_home_refresh(["home:U0BOB"]) == 0
    assert await store.finish_outbox(bob.id, "w1", at=later())
    assert await store.finish_outbox(ann.id, "w1", at=later())
    assert await claim_all(store) == [("home_stale", "home:U0BOB")]
    assert await store.queue_home_refresh([]) == 0
