"""Cool-off and undo in the store (issue 42.6), on every backend: a cool-off begins once and
ends by the store's clock; the call is claimed to run, or cancelled, by one compare-and-set
each, so a cancel and the claim racing as the cool-off ends give exactly one winner; the undo
window opens when the call's effect completed (with its result), never at the claim; an
undo is claimed once, and only within its window, and reads undone only when it ends well."""

from __future__ import annotations

import asyncio
from datetime import timedelta
from typing import Any

from store import Approval
from store import ApprovalState
from store import AuditEvent
from store import Batch
from store import EffectStatus
from store import Run
from store import Store
from store.base import CallEnded
from store.base import Ruling
from store.base import UndoEnded

from .builders import Clock


def event(approval: Approval, action: str, clock: Clock, actor: str = "w1") -> AuditEvent:
    return AuditEvent(
        action=action, actor=actor, run_id=approval.run_id, approval_id=approval.id, at=clock()
    )


async def actions_of(store: Store, approval: Approval) -> list[str]:
    """The audit trail's actions on `approval`, oldest first."""
    events = await store.list_events(run_id=approval.run_id)
    return [e.action for e in events if e.approval_id == approval.id]


async def approved(store: Store, pending: Approval, clock: Clock) -> Approval:
    return await store.decide_approval(
        pending.id, Ruling(ApprovalState.APPROVED, by="U1", at=clock())
    )


async def ended(store: Store, approval: Approval, status: EffectStatus) -> Approval:
    """The approved call's effect ended with `status` (committed with its result)."""
    assert approval.run_id is not None
    await store.commit(Batch(run_id=approval.run_id, ended_calls=[CallEnded(approval.id, status)]))
    return await store.get_approval(approval.id)


async def undo_ends(store: Store, approval: Approval, error: str | None = None) -> Approval:
    assert approval.run_id is not None
    await store.commit(Batch(run_id=approval.run_id, undo_ended=UndoEnded(approval.id, error)))
    return await store.get_approval(approval.id)


async def begun(
    store: Store, pending: Approval, clock: Clock, *, cool_off: int | None, undo: int | None
) -> tuple[Approval, AuditEvent]:
    """`pending` approved, its cool-off (or straight its undo window) begun; and the event
    that began it."""
    approval = await approved(store, pending, clock)
    started = event(approval, "cool_off_started", clock)
    await store.advance_cool_off(approval.id, cool_off=cool_off, undo=undo, event=started)
    if cool_off is None:
        await ended(store, approval, EffectStatus.COMPLETED)
    return approval, started


async def test_a_cool_off_begins_once_and_ends_by_the_stores_clock(
    store: Store, pending: Approval, clock: Clock
) -> None:
    approval = await approved(store, pending, clock)
    started = event(approval, "cool_off_started", clock)

    first = await store.advance_cool_off(approval.id, cool_off=300, undo=None, event=started)
    clock.advance(seconds=299)
    again = await store.advance_cool_off(approval.id, cool_off=300, undo=None, event=started)

    assert (first.cool_off, again.cool_off) == ("waiting", "waiting")
    assert first.cool_off_until == again.cool_off_until == clock() + timedelta(seconds=1)
    assert await store.cool_offs_ended() == []
    assert await store.next_cool_off_end() == first.cool_off_until
    clock.advance(seconds=1)
    assert await store.cool_offs_ended() == [approval.run_id]
    ran = await store.advance_cool_off(approval.id, cool_off=300, undo=3600, event=started)
    assert ran.cool_off == "ran"
    assert (ran.undo_until, ran.undo_seconds) == (None, 3600)  # no Undo before the effect ends
    assert not await store.claim_undo(approval.id, by="U2", events=[])
    clock.advance(seconds=5)
    completed = await ended(store, approval, EffectStatus.COMPLETED)
    assert completed.ran_outcome == "completed"
    assert completed.undo_until == clock() + timedelta(hours=1)  # from the effect's end
    assert await store.cool_offs_ended() == []
    actions = await actions_of(store, approval)
    assert actions.count("cool_off_started") == 1


async def test_a_cancel_and_the_claim_at_the_end_have_one_winner(
    store: Store, pending: Approval, clock: Clock
) -> None:
    approval, started = await begun(store, pending, clock, cool_off=60, undo=None)
    clock.advance(seconds=60)  # the cool-off ends as the cancel lands

    claimed, cancelled = await asyncio.gather(
        store.advance_cool_off(approval.id, cool_off=60, undo=None, event=started),
        store.cancel_cool_off(approval.id, by="U2", event=event(approval, "cancel", clock, "U2")),
    )

    final = await store.get_approval(approval.id)
    assert (claimed.cool_off == "ran") != cancelled  # exactly one of them won
    assert final.cool_off == ("cancelled" if cancelled else "ran")
    assert final.cool_off_by == ("U2" if cancelled else None)


async def test_a_cancel_after_the_claim_changes_nothing(
    store: Store, pending: Approval, clock: Clock
) -> None:
    approval, started = await begun(store, pending, clock, cool_off=60, undo=None)
    clock.advance(seconds=61)
    assert (
        await store.advance_cool_off(approval.id, cool_off=60, undo=None, event=started)
    ).cool_off == "ran"

    assert not await store.cancel_cool_off(approval.id, by="U2", event=event(approval, "c", clock))
    assert (await store.get_approval(approval.id)).cool_off == "ran"


async def test_an_undo_is_claimed_once_and_only_within_its_window(
    store: Store, pending: Approval, clock: Clock
) -> None:
    approval, _ = await begun(store, pending, clock, cool_off=None, undo=60)
    undo = event(approval, "undo_requested", clock, "U2")

    claims = await asyncio.gather(
        *(store.claim_undo(approval.id, by=f"U{n}", events=[undo]) for n in range(2, 6))
    )

    assert sorted(claims) == [False, False, False, True]
    undoing = await store.get_approval(approval.id)
    assert undoing.undoing_by in {"U2", "U3", "U4", "U5"}
    assert undoing.undone_by is None  # not before its compensation ended
    clock.advance(seconds=2)
    undone = await undo_ends(store, approval)
    assert (undone.undone_by, undone.undoing_by) == (undoing.undoing_by, None)
    assert undone.undone_at == clock()
    actions = await actions_of(store, approval)
    assert actions.count("undo_requested") == 1


async def test_an_undo_after_its_window_is_refused(
    store: Store, pending: Approval, clock: Clock
) -> None:
    approval, _ = await begun(store, pending, clock, cool_off=None, undo=60)
    clock.advance(seconds=60)

    assert not await store.claim_undo(approval.id, by="U2", events=[event(approval, "u", clock)])
    assert (await store.get_approval(approval.id)).undone_by is None


async def test_a_failed_undo_is_not_undone_and_may_be_tried_again(
    store: Store, pending: Approval, clock: Clock
) -> None:
    approval, _ = await begun(store, pending, clock, cool_off=None, undo=60)
    assert await store.claim_undo(approval.id, by="U2", events=[])

    failed = await undo_ends(store, approval, "release_seat failed: provider down")

    assert (failed.undone_by, failed.undone_at, failed.undoing_by) == (None, None, None)
    assert failed.undo_error == "release_seat failed: provider down"
    assert await store.claim_undo(approval.id, by="U3", events=[])  # tried again
    undone = await undo_ends(store, approval)
    assert (undone.undone_by, undone.undo_error) == ("U3", None)


async def test_a_call_whose_effect_failed_or_is_in_doubt_has_no_undo_window(
    store: Store, run: Run, make_approval: Any, clock: Clock
) -> None:
    for status in (EffectStatus.FAILED, EffectStatus.IN_DOUBT):
        pending = make_approval(run.id, idempotency_key=f"hold-{status.value}")
        await store.create_approval(pending)
        approval = await approved(store, pending, clock)
        started = event(approval, "cool_off_started", clock)
        await store.advance_cool_off(approval.id, cool_off=None, undo=60, event=started)
        after = await ended(store, approval, status)
        assert (after.ran_outcome, after.undo_until) == (status.value, None)
        assert not await store.claim_undo(approval.id, by="U2", events=[])
        again = await ended(store, approval, EffectStatus.COMPLETED)  # recorded once
        assert again.ran_outcome == status.value
