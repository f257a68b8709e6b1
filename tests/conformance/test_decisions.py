"""Decisions: pending -> approved | declined, exactly once, by compare-and-set."""

from __future__ import annotations

import asyncio
from datetime import datetime
from datetime import timedelta
from typing import Any

import pytest

from store import Approval
from store import ApprovalState
from store import AuditEvent
from store import Run
from store import Store
from store import errors
from store.base import Ruling

from .builders import Clock
from .builders import MakeApproval

APPROVED, DECLINED, PENDING = ApprovalState.APPROVED, ApprovalState.DECLINED, ApprovalState.PENDING


def decided_event(approval: Approval, by: str, at: datetime) -> AuditEvent:
    return AuditEvent(
        action="decide", actor=by, run_id=approval.run_id, approval_id=approval.id, at=at
    )


async def test_approve_records_who_when_and_the_approved_args(
    store: Store, pending: Approval, clock: Clock
) -> None:
    edited = {"order_id": "4471", "amount_cents": 2000}

    decided = await store.decide_approval(
        pending.id, Ruling(APPROVED, by="U1", at=clock(), reason="ok", approved_args=edited)
    )

    assert decided == pending.model_copy(
        update={
            "state": APPROVED,
            "decided_by": "U1",
            "decided_at": clock(),
            "reason": "ok",
            "approved_args": edited,
        }
    )
    assert await store.get_approval(pending.id) == decided


async def test_decline_records_the_reason(store: Store, pending: Approval, clock: Clock) -> None:
    decided = await _decide(store, pending.id, DECLINED, clock(), reason="expired")

    assert (decided.state, decided.reason, decided.approved_args) == (DECLINED, "expired", None)


@pytest.mark.parametrize(
    ("first", "second"), [(APPROVED, DECLINED), (DECLINED, APPROVED), (APPROVED, APPROVED)]
)
async def test_a_second_decision_is_refused_and_changes_nothing(
    store: Store, pending: Approval, clock: Clock, first: ApprovalState, second: ApprovalState
) -> None:
    decided = await store.decide_approval(
        pending.id,
        Ruling(first, by="U1", at=clock(), reason="first"),
        event=decided_event(pending, "U1", clock()),
    )

    with pytest.raises(errors.AlreadyDecided) as refused:
        await store.decide_approval(
            pending.id,
            Ruling(
                second,
                by="U2",
                at=clock() + timedelta(minutes=5),
                reason="second",
                approved_args={"amount_cents": 1},
            ),
            event=decided_event(pending, "U2", clock()),
        )

    assert refused.value.details["approval"] == decided
    assert await store.get_approval(pending.id) == decided
    assert [e.actor for e in await decisions(store, pending.run_id)] == ["U1"]


async def test_approve_and_decline_at_once_have_exactly_one_winner(
    store: Store, pending: Approval, clock: Clock
) -> None:
    outcomes = await asyncio.gather(
        store.decide_approval(pending.id, Ruling(APPROVED, by="U1", at=clock())),
        store.decide_approval(pending.id, Ruling(DECLINED, by="U2", at=clock(), reason="no")),
        return_exceptions=True,
    )

    await _assert_one_winner(store, pending, outcomes)


async def test_many_concurrent_deciders_have_exactly_one_winner(
    store: Store, pending: Approval, clock: Clock
) -> None:
    deciders = [
        store.decide_approval(
            pending.id,
            Ruling(APPROVED if i % 2 else DECLINED, by=f"U{i}", at=clock()),
            event=decided_event(pending, f"U{i}", clock()),
        )
        for i in range(24)
    ]

    outcomes = await asyncio.gather(*deciders, return_exceptions=True)

    winner = await _assert_one_winner(store, pending, outcomes)
    assert [e.actor for e in await decisions(store, pending.run_id)] == [winner.decided_by]


@pytest.fixture
async def due_in_an_hour(
    store: Store, run: Run, make_approval: MakeApproval, clock: Clock
) -> Approval:
    """A pending approval of `run` whose deadline is an hour away, written to the store."""
    approval = make_approval(run.id, deadline=clock() + timedelta(hours=1))
    await store.create_approval(approval)
    return approval


async def test_a_deadline_decision_before_the_deadline_is_refused(
    store: Store, due_in_an_hour: Approval, clock: Clock
) -> None:
    with pytest.raises(errors.Conflict) as refused:
        await store.decide_approval(
            due_in_an_hour.id,
            Ruling(DECLINED, by="timeout", at=clock(), reason="expired"),
            due_only=True,
        )

    assert not isinstance(refused.value, errors.AlreadyDecided)
    assert await store.get_approval(due_in_an_hour.id) == due_in_an_hour


async def test_a_deadline_decision_after_the_deadline_is_taken(
    store: Store, due_in_an_hour: Approval, clock: Any
) -> None:
    later = clock.advance(hours=1, seconds=1)

    decided = await store.decide_approval(
        due_in_an_hour.id, Ruling(DECLINED, by="timeout", at=later, reason="expired"), due_only=True
    )

    assert (decided.state, decided.reason) == (DECLINED, "expired")


async def test_a_decision_writes_its_audit_event(
    store: Store, pending: Approval, clock: Clock
) -> None:
    event = AuditEvent(
        action="approve",
        actor="U1",
        run_id=pending.run_id,
        approval_id=pending.id,
        detail={"via": "slack"},
        at=clock(),
    )

    await store.decide_approval(pending.id, Ruling(APPROVED, by="U1", at=clock()), event=event)

    [written] = await decisions(store, pending.run_id)
    assert written.model_copy(update={"id": None, "prev_hash": None, "hash": None}) == event
    assert written.hash is not None  # chained (`store.chain`)


# helpers


async def decisions(store: Store, run_id: str | None) -> list[AuditEvent]:
    """The run's audit events but the request the store itself records with an approval."""
    return [e for e in await store.list_events(run_id=run_id) if e.action != "approval_requested"]


async def _decide(
    store: Store, approval_id: str, state: ApprovalState, at: datetime, reason: str | None = None
) -> Approval:
    return await store.decide_approval(approval_id, Ruling(state, by="U9", at=at, reason=reason))


async def _assert_one_winner(
    store: Store, approval: Approval, outcomes: list[Approval | BaseException]
) -> Approval:
    winners = [o for o in outcomes if isinstance(o, Approval)]
    losers = [o for o in outcomes if not isinstance(o, Approval)]
    assert len(winners) == 1, outcomes
    assert all(isinstance(o, errors.AlreadyDecided) for o in losers), losers
    assert await store.get_approval(approval.id) == winners[0]
    return winners[0]
