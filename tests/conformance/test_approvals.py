"""Approvals: created directly or requested in a batch, listed, voted on."""

from __future__ import annotations

import asyncio
from datetime import datetime, timedelta

import pytest

from store import (
    Approval,
    ApprovalState,
    Batch,
    Delivery,
    Run,
    Store,
    errors,
)

from .builders import Clock, MakeApproval, MakeRun

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
        approval.id, APPROVED, by="U1", at=clock(), reason=None, approved_args=None
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


async def test_get_unknown_approval_is_not_found(store: Store) -> None:
    with pytest.raises(errors.NotFound):
        await store.get_approval("no-such-approval")


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


# votes


async def test_add_vote_counts_distinct_approvers(
    store: Store, pending: Approval, clock: Clock
) -> None:
    counts = [await store.add_vote(pending.id, user, clock()) for user in ("U1", "U2")]

    with pytest.raises(errors.AlreadyVoted):  # one vote per person, by the store's key
        await store.add_vote(pending.id, "U1", clock())
    assert counts == [1, 2]
    assert await store.list_votes(pending.id) == ["U1", "U2"]
    assert await store.list_votes("no-such-approval") == []


async def test_one_persons_votes_sent_at_once_count_once(
    store: Store, pending: Approval, clock: Clock
) -> None:
    tries = await asyncio.gather(
        *(store.add_vote(pending.id, "U1", clock()) for _ in range(20)), return_exceptions=True
    )

    assert [t for t in tries if not isinstance(t, errors.AlreadyVoted)] == [1]
    assert await store.list_votes(pending.id) == ["U1"]


async def test_add_vote_on_a_decided_approval_is_refused(
    store: Store, pending: Approval, clock: Clock
) -> None:
    await _decide(store, pending.id, APPROVED, clock())

    with pytest.raises(errors.AlreadyDecided):
        await store.add_vote(pending.id, "U2", clock())


async def test_add_vote_on_unknown_approval_is_not_found(store: Store, clock: Clock) -> None:
    with pytest.raises(errors.NotFound):
        await store.add_vote("no-such-approval", "U1", clock())


# helpers


async def _decide(
    store: Store, approval_id: str, state: ApprovalState, at: datetime, reason: str | None = None
) -> Approval:
    return await store.decide_approval(approval_id, state, by="U9", at=at, reason=reason)
