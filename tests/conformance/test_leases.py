"""Leases: one driver per run; an expired lease is taken over; recovery finds idle runs."""

from __future__ import annotations

from datetime import UTC
from datetime import datetime
from datetime import timedelta

import pytest

from store import ApprovalState
from store import AuditEvent
from store import Batch
from store import EffectOutcome
from store import EffectStatus
from store import Run
from store import RunStatus
from store import Store
from store.base import Ruling
from tests.conftest import Clock as HandClock

from .builders import Append
from .builders import Clock
from .builders import MakeApproval
from .builders import MakeEffect
from .builders import MakeRun

MINUTE = timedelta(minutes=1)


@pytest.fixture
def caller() -> Clock:
    """The calling worker's clock, which the store does not date leases by (so the store
    is not given it: leases are the database's own)."""
    return HandClock()


async def holder(store: Store, run_id: str) -> tuple[str | None, float | None]:
    """Who holds the run's lease, and for how many more seconds by the database's clock
    (rounded: the store dates a lease by its own clock, whatever the caller's says)."""
    got = await store.get_run(run_id)
    if got.lease_expires_at is None:
        return got.lease_owner, None
    left = (got.lease_expires_at - await store.database_now()).total_seconds()
    return got.lease_owner, round(left / 5) * 5


async def take(store: Store, run_id: str, owner: str, seconds: float, caller: Clock) -> int | None:
    """Take a lease of this length; a negative one has lapsed already."""
    now = caller()
    return await store.acquire_lease(run_id, owner, until=now + timedelta(seconds=seconds), now=now)


async def test_a_free_lease_is_acquired(store: Store, run: Run, caller: Clock) -> None:
    assert await take(store, run.id, "W1", 60, caller) == 1

    assert await holder(store, run.id) == ("W1", 60)


async def test_a_live_lease_of_another_worker_is_refused(
    store: Store, run: Run, caller: Clock
) -> None:
    await take(store, run.id, "W1", 60, caller)

    taken = await take(store, run.id, "W2", 300, caller)

    assert taken is None
    assert await holder(store, run.id) == ("W1", 60)


async def test_a_live_lease_is_refused_whatever_the_callers_clock_says(
    store: Store, run: Run, caller: Clock
) -> None:
    await take(store, run.id, "W1", 60, caller)
    ahead = caller() + 10 * MINUTE  # a worker whose clock runs ten minutes fast

    taken = await store.acquire_lease(run.id, "W2", until=ahead + MINUTE, now=ahead)

    assert taken is None
    assert await store.runs_to_recover(ahead, owner="W2") == []
    assert await holder(store, run.id) == ("W1", 60)


async def test_own_lease_is_acquired_again_and_extended_in_a_new_epoch(
    store: Store, run: Run, caller: Clock
) -> None:
    first = await take(store, run.id, "W1", 60, caller)

    again = await take(store, run.id, "W1", 120, caller)

    assert (first, again) == (1, 2)
    assert await holder(store, run.id) == ("W1", 120)


async def test_an_expired_lease_is_taken_over_in_a_higher_epoch(
    store: Store, run: Run, caller: Clock
) -> None:
    await take(store, run.id, "W1", -60, caller)

    assert await take(store, run.id, "W2", 60, caller) == 2

    assert await holder(store, run.id) == ("W2", 60)


async def test_a_lease_on_an_unknown_run_is_not_acquired(store: Store, caller: Clock) -> None:
    assert await take(store, "no-such-run", "W1", 60, caller) is None


async def test_renew_extends_only_a_lease_we_hold_in_its_epoch(
    store: Store, run: Run, caller: Clock
) -> None:
    epoch = await take(store, run.id, "W1", 60, caller)
    now = caller()

    assert await store.renew_lease(run.id, "W1", until=now + 3 * MINUTE, now=now, epoch=epoch)
    assert not await store.renew_lease(run.id, "W2", until=now + 9 * MINUTE, now=now)
    assert not await store.renew_lease(run.id, "W1", until=now + 9 * MINUTE, now=now, epoch=0)

    assert await holder(store, run.id) == ("W1", 180)


async def test_release_frees_only_a_lease_we_hold(store: Store, run: Run, caller: Clock) -> None:
    epoch = await take(store, run.id, "W1", 60, caller)

    await store.release_lease(run.id, "W2")
    await store.release_lease(run.id, "W1", epoch=0)
    assert await holder(store, run.id) == ("W1", 60)

    await store.release_lease(run.id, "W1", epoch=epoch)
    assert await holder(store, run.id) == (None, None)
    assert await take(store, run.id, "W2", 60, caller) == 2


async def test_next_lease_lapse_is_the_first_other_workers_lease_to_end(
    store: Store, make_run: MakeRun, caller: Clock
) -> None:
    assert await store.next_lease_lapse(owner="W1", now=caller()) is None
    mine, soon, later = [await make_run() for _ in range(3)]
    await take(store, mine.id, "W1", 5, caller)
    await take(store, soon.id, "W2", 30, caller)
    await take(store, later.id, "W3", 90, caller)

    left = await store.next_lease_lapse(owner="W1", now=caller() + 10 * MINUTE)

    assert left is not None
    assert 25 < left <= 30


async def test_the_database_clock_is_near_this_hosts(store: Store) -> None:
    skew = (await store.database_now() - datetime.now(UTC)).total_seconds()

    assert abs(skew) < 5


async def test_runs_to_recover_are_the_runs_nobody_drives(
    store: Store, make_run: MakeRun, append: Append, make_approval: MakeApproval, caller: Clock
) -> None:
    now = caller()
    unleased, mine, expired, live = [await make_run() for _ in range(4)]
    await take(store, mine.id, "W1", 60, caller)
    await take(store, expired.id, "W2", -60, caller)
    await take(store, live.id, "W2", 60, caller)
    parked_done, parked_waiting, finished = [await make_run() for _ in range(3)]
    for parked, state in [(parked_done, ApprovalState.APPROVED), (parked_waiting, None)]:
        await append(parked.id, status=RunStatus.WAITING_APPROVAL)
        approval = make_approval(parked.id)
        await store.create_approval(approval)
        if state is not None:
            await store.decide_approval(approval.id, Ruling(state, by="U1", at=now))
    await append(finished.id, status=RunStatus.DONE)

    found = await store.runs_to_recover(now, owner="W1")

    assert sorted(found) == sorted([unleased.id, mine.id, expired.id, parked_done.id])


def undo_event(run_id: str, action: str = "undo_started") -> AuditEvent:
    return AuditEvent(action=action, actor="U1", run_id=run_id, detail={"to_step": 0})


async def test_interrupted_undos_are_runs_whose_undo_began_and_never_ended(
    store: Store, make_run: MakeRun, caller: Clock
) -> None:
    now = caller()
    unleased, mine, expired, live, rolled_back, compensated, again, plain = [
        await make_run() for _ in range(8)
    ]
    for run in (unleased, mine, expired, live, rolled_back, compensated, again):
        await store.record_event(undo_event(run.id))
    await store.record_event(undo_event(rolled_back.id, "rollback"))
    await store.record_event(undo_event(compensated.id, "compensate"))
    await store.record_event(undo_event(again.id, "rollback"))
    await store.record_event(undo_event(again.id))  # began once more, and died
    await store.record_event(undo_event(plain.id, "rollback"))
    await take(store, mine.id, "W1", 60, caller)
    await take(store, expired.id, "W2", -60, caller)
    await take(store, live.id, "W2", 60, caller)

    found = await store.interrupted_undos(now, owner="W1")

    assert sorted(found) == sorted([unleased.id, mine.id, expired.id, again.id])


async def test_an_undo_that_died_between_two_compensations_is_found(
    store: Store, run: Run, append: Append, make_effect: MakeEffect, caller: Clock
) -> None:
    await store.record_event(undo_event(run.id))
    undo = make_effect(run.id, call_id="undo:c1", compensates="c1")
    await append(run.id, status=RunStatus.DONE, start=[undo])
    done = EffectOutcome(
        run_id=run.id, call_id="undo:c1", status=EffectStatus.COMPLETED, finished_at=caller()
    )
    await store.commit(Batch(run_id=run.id, finish=[done]))

    assert await store.interrupted_undos(caller(), owner="W1") == [run.id]
