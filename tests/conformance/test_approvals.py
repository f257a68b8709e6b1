"""Approvals: created directly or requested in a batch, listed, voted on."""

from __future__ import annotations

import asyncio
from collections import Counter
from datetime import datetime
from datetime import timedelta

import pytest

from store import Approval
from store import ApprovalState
from store import AuditEvent
from store import Batch
from store import Delivery
from store import Run
from store import Store
from store import errors
from store.base import Ruling
from store.base import Voted

from .builders import Clock
from .builders import MakeApproval
from .builders import MakeRun

APPROVED, DECLINED, PENDING = ApprovalState.APPROVED, ApprovalState.DECLINED, ApprovalState.PENDING


# create, get, list


async def test_create_then_get_an_approval(
    store: Store, run: Run, make_approval: MakeApproval, clock: Clock
) -> None:
    approval = make_approval(
        run.id,
        policy="refunds",
        requested_by="U0",
        required_approvals=2,
        deadline=clock() + timedelta(hours=4),
        next_reminder_at=clock() + timedelta(hours=1),
        channel="C1",
        message_ts="1700000000.000100",
        delivery=Delivery.DELIVERED,
        callback_url="https://example.test/cb",
        callback_status=Delivery.PENDING,
        idempotency_key="refund-4471",
    )

    await store.create_approval(approval)

    assert await store.get_approval(approval.id) == approval


async def test_an_approval_without_a_run_can_be_created(
    store: Store, make_approval: MakeApproval
) -> None:
    approval = make_approval(None, tool="deploy", args={"service": "api"})

    await store.create_approval(approval)

    assert await store.get_approval(approval.id) == approval


async def test_an_approval_keeps_its_resume_state_through_its_decision(
    store: Store, make_approval: MakeApproval, clock: Clock
) -> None:
    kept = '{"paused": "state \u00e9", "big": "' + "x" * 300_000 + '"}'
    approval = make_approval(None, tool="deploy").model_copy(update={"resume_state": kept})

    await store.create_approval(approval)
    decided = await store.decide_approval(
        approval.id, Ruling(APPROVED, by="U1", at=clock(), reason=None, approved_args=None)
    )

    assert (await store.get_approval(approval.id)).resume_state == kept
    assert decided.resume_state == kept
    assert "resume_state" not in decided.model_dump()


async def test_create_approval_with_a_taken_id_is_refused_and_changes_nothing(
    store: Store, pending: Approval
) -> None:
    with pytest.raises(errors.AlreadyExists):
        await store.create_approval(pending.model_copy(update={"args": {"amount_cents": 1}}))

    assert await store.get_approval(pending.id) == pending


async def test_create_approval_for_an_unknown_run_is_not_found(
    store: Store, make_approval: MakeApproval
) -> None:
    approval = make_approval("no-such-run")

    with pytest.raises(errors.NotFound):
        await store.create_approval(approval)


async def test_approvals_of_person_are_theirs_newest_first_since_a_time_at_most_a_limit(
    store: Store, make_approval: MakeApproval, clock: Clock
) -> None:
    at = [clock() + timedelta(minutes=m) for m in range(5)]
    asked = [  # requested by Eve, by Ann (decided by U9), by Eve (decided), by Ann, and long ago
        make_approval(requested_by=who, created_at=when)
        for who, when in zip(
            ["U0EVE", "U0ANN", "U0EVE", "U0ANN", "U0EVE"],
            [at[1], at[2], at[3], at[4], at[0] - timedelta(days=60)],
            strict=True,
        )
    ]
    for approval in asked:
        await store.create_approval(approval)
    await _decide(store, asked[1].id, APPROVED, clock())
    await _decide(store, asked[2].id, DECLINED, clock())

    since = at[0]
    eve = await store.approvals_of_person("U0EVE", since=since, limit=10)
    assert [a.id for a in eve] == [asked[2].id, asked[0].id]  # not the one from before
    assert [a.id for a in await store.approvals_of_person("U0EVE", since=since, limit=1)] == [
        asked[2].id
    ]
    decider = await store.approvals_of_person("U9", since=since, limit=10)
    assert [a.id for a in decider] == [asked[2].id, asked[1].id]
    assert await store.approvals_of_person("U0NOBODY", since=since, limit=10) == []


async def test_list_approvals_by_run_and_state_oldest_first(
    store: Store, run: Run, make_run: MakeRun, make_approval: MakeApproval, clock: Clock
) -> None:
    other = await make_run()
    made = [
        make_approval(rid, created_at=clock() + timedelta(minutes=m))
        for m, rid in enumerate([run.id, other.id, run.id, run.id])
    ]
    for approval in reversed(made):
        await store.create_approval(approval)
    await _decide(store, made[2].id, DECLINED, clock())

    assert [a.id for a in await store.list_approvals()] == [a.id for a in made]
    assert [a.id for a in await store.list_approvals(run_id=run.id)] == [
        made[0].id,
        made[2].id,
        made[3].id,
    ]
    assert [a.id for a in await store.list_approvals(run_id=run.id, state=PENDING)] == [
        made[0].id,
        made[3].id,
    ]
    assert [a.id for a in await store.list_approvals(state=DECLINED)] == [made[2].id]
    assert [a.id for a in await store.list_approvals(limit=2)] == [made[0].id, made[1].id]


# requested in a batch


async def test_a_batch_creates_the_approvals_it_requests(
    store: Store, run: Run, make_approval: MakeApproval
) -> None:
    approval = make_approval(run.id, idempotency_key="refund-4471")

    committed = await store.commit(Batch(run_id=run.id, request=[approval]))

    assert committed.prior_decisions == {}
    assert await store.get_approval(approval.id) == approval


async def test_a_request_declined_before_in_the_lineage_is_answered_with_that_decline(
    store: Store,
    run: Run,
    make_run: MakeRun,
    pending: Approval,
    make_approval: MakeApproval,
    clock: Clock,
) -> None:
    declined = await _decide(store, pending.id, DECLINED, clock(), reason="too much")
    fork = await make_run(lineage_id=run.lineage_id, parent_id=run.id)
    again = make_approval(fork.id, lineage_id=run.lineage_id, idempotency_key="refund-4471")

    committed = await store.commit(Batch(run_id=fork.id, request=[again]))

    assert committed.prior_decisions == {again.call_id: declined}
    with pytest.raises(errors.NotFound):
        await store.get_approval(again.id)


@pytest.mark.parametrize("earlier", [APPROVED, PENDING])
async def test_a_request_not_declined_before_is_asked_again(
    store: Store,
    run: Run,
    pending: Approval,
    make_approval: MakeApproval,
    clock: Clock,
    earlier: ApprovalState,
) -> None:
    if earlier != PENDING:
        await _decide(store, pending.id, earlier, clock())
    again = make_approval(run.id, idempotency_key="refund-4471")

    committed = await store.commit(Batch(run_id=run.id, request=[again]))

    assert committed.prior_decisions == {}
    assert (await store.get_approval(again.id)).state == PENDING


async def test_a_decline_in_another_lineage_does_not_answer_a_request(
    store: Store, pending: Approval, make_run: MakeRun, make_approval: MakeApproval, clock: Clock
) -> None:
    await _decide(store, pending.id, DECLINED, clock())
    stranger = await make_run()
    again = make_approval(stranger.id, idempotency_key="refund-4471")

    committed = await store.commit(Batch(run_id=stranger.id, request=[again]))

    assert committed.prior_decisions == {}
    assert (await store.get_approval(again.id)).state == PENDING


# votes: a person's decision, cast in one transaction


async def test_votes_count_distinct_approvers_until_the_quorum_decides(
    store: Store, run: Run, make_approval: MakeApproval, clock: Clock
) -> None:
    approval = await _quorum(store, run, make_approval, 3)
    first = await _vote(store, approval, "U1", clock())
    second = await _vote(store, approval, "U2", clock())

    with pytest.raises(errors.AlreadyVoted) as again:  # one vote per person, by the store's key
        await _vote(store, approval, "U1", clock())
    third = await _vote(store, approval, "U3", clock())

    assert again.value.votes == 2
    assert [v.votes for v in (first, second, third)] == [1, 2, 3]
    assert [v.approval.state for v in (first, second, third)] == [PENDING, PENDING, APPROVED]
    assert (third.approval.decided_by, third.approval.reason) == ("U3", "looks right")
    assert await store.list_votes(approval.id) == ["U1", "U2", "U3"]
    assert await store.list_votes("no-such-approval") == []
    assert _actions(await store.list_events(run_id=run.id)) == {"vote": 3, "approval_approved": 1}
    votes = [e.detail for e in await store.list_events(run_id=run.id) if e.action == "vote"]
    assert votes == [{"votes": n, "required": 3} for n in (1, 2, 3)]


async def test_a_decline_decides_at_once_and_is_no_vote(
    store: Store, run: Run, make_approval: MakeApproval, clock: Clock
) -> None:
    approval = await _quorum(store, run, make_approval, 2)

    declined = await _vote(store, approval, "U1", clock(), DECLINED)

    assert (declined.approval.state, declined.votes) == (DECLINED, 0)
    assert await store.list_votes(approval.id) == []
    assert _actions(await store.list_events(run_id=run.id)) == {"approval_declined": 1}


async def test_one_approver_decides_at_once_without_a_vote(
    store: Store, pending: Approval, clock: Clock
) -> None:
    approved = await _vote(store, pending, "U1", clock())

    assert (approved.approval.state, approved.votes) == (APPROVED, 0)
    assert await store.list_votes(pending.id) == []


async def test_one_persons_votes_sent_at_once_count_once(
    store: Store, run: Run, make_approval: MakeApproval, clock: Clock
) -> None:
    approval = await _quorum(store, run, make_approval, 3)

    tries = await asyncio.gather(
        *(_vote(store, approval, "U1", clock()) for _ in range(20)), return_exceptions=True
    )

    assert [t.votes for t in tries if not isinstance(t, errors.AlreadyVoted)] == [1]
    assert await store.list_votes(approval.id) == ["U1"]
    assert _actions(await store.list_events(run_id=run.id)) == {"vote": 1}


async def test_votes_by_many_sent_at_once_each_count_once(
    store: Store, run: Run, make_approval: MakeApproval, clock: Clock
) -> None:
    people = [f"U{n}" for n in range(20)]
    approval = await _quorum(store, run, make_approval, len(people))

    voted = await asyncio.gather(*(_vote(store, approval, u, clock()) for u in people))

    assert sorted(v.votes for v in voted) == list(range(1, 21))
    assert [v.approval.state for v in voted].count(APPROVED) == 1
    assert sorted(await store.list_votes(approval.id)) == sorted(people)
    events = await store.list_events(run_id=run.id)
    assert _actions(events) == {"vote": 20, "approval_approved": 1}
    assert sorted(e.actor for e in events if e.action == "vote") == sorted(people)
    assert (await store.get_approval(approval.id)).state == APPROVED


async def test_a_vote_on_a_decided_approval_is_refused_and_writes_nothing(
    store: Store, run: Run, make_approval: MakeApproval, clock: Clock
) -> None:
    approval = await _quorum(store, run, make_approval, 2)
    await _decide(store, approval.id, APPROVED, clock())

    with pytest.raises(errors.AlreadyDecided):
        await _vote(store, approval, "U2", clock())
    assert await store.list_votes(approval.id) == []
    assert _actions(await store.list_events(run_id=run.id)) == {}


async def test_a_decision_past_the_deadline_is_refused_and_writes_nothing(
    store: Store, run: Run, make_approval: MakeApproval, clock: Clock
) -> None:
    past = clock() - timedelta(hours=1)  # by the database's clock, which `clock` stands in for
    approval = make_approval(run.id, deadline=past)
    await store.create_approval(approval)

    with pytest.raises(errors.Expired):
        await _vote(store, approval, "U1", past, open_only=True)
    assert (await store.get_approval(approval.id)).state == PENDING
    assert _actions(await store.list_events(run_id=run.id)) == {}


async def test_a_vote_on_unknown_approval_is_not_found(
    store: Store, run: Run, make_approval: MakeApproval, clock: Clock
) -> None:
    never_written = make_approval(run.id, required_approvals=2)

    with pytest.raises(errors.NotFound):
        await _vote(store, never_written, "U1", clock())


# helpers


async def _decide(
    store: Store, approval_id: str, state: ApprovalState, at: datetime, reason: str | None = None
) -> Approval:
    return await store.decide_approval(approval_id, Ruling(state, by="U9", at=at, reason=reason))


async def _quorum(store: Store, run: Run, make_approval: MakeApproval, needed: int) -> Approval:
    approval = make_approval(run.id, required_approvals=needed, requested_by="U0")
    await store.create_approval(approval)
    return approval


async def _vote(
    store: Store,
    approval: Approval,
    by: str,
    at: datetime,
    state: ApprovalState = APPROVED,
    *,
    open_only: bool = False,
) -> Voted:
    """A person's decision with its audit event, as the runtime casts it."""
    event = AuditEvent(
        action=f"approval_{state.value}",
        actor=by,
        run_id=approval.run_id,
        approval_id=approval.id,
        at=at,
    )
    return await store.cast_vote(
        approval.id,
        Ruling(state, by=by, at=at, reason="looks right"),
        event=event,
        open_only=open_only,
    )


def _actions(events: list[AuditEvent]) -> dict[str, int]:
    """The audit's actions after the approval was requested, counted."""
    return dict(Counter(e.action for e in events if e.action != "approval_requested"))
