"""Leases: one driver per run; an expired lease is taken over; recovery finds idle runs."""

from __future__ import annotations

from datetime import datetime, timedelta

from store import (
    ApprovalState,
    AuditEvent,
    Batch,
    EffectOutcome,
    EffectStatus,
    Run,
    RunStatus,
    Store,
)

from .builders import Append, Clock, MakeApproval, MakeEffect, MakeRun

MINUTE = timedelta(minutes=1)


async def holder(store: Store, run_id: str) -> tuple[str | None, datetime | None]:
    got = await store.get_run(run_id)
    return got.lease_owner, got.lease_expires_at


async def test_a_free_lease_is_acquired(store: Store, run: Run, clock: Clock) -> None:
    assert await store.acquire_lease(run.id, "W1", until=clock() + MINUTE, now=clock())

    assert await holder(store, run.id) == ("W1", clock() + MINUTE)


async def test_a_live_lease_of_another_worker_is_refused(
    store: Store, run: Run, clock: Clock
) -> None:
    await store.acquire_lease(run.id, "W1", until=clock() + MINUTE, now=clock())

    taken = await store.acquire_lease(run.id, "W2", until=clock() + 5 * MINUTE, now=clock())

    assert not taken
    assert await holder(store, run.id) == ("W1", clock() + MINUTE)


async def test_own_lease_is_acquired_again_and_extended(
    store: Store, run: Run, clock: Clock
) -> None:
    await store.acquire_lease(run.id, "W1", until=clock() + MINUTE, now=clock())

    assert await store.acquire_lease(run.id, "W1", until=clock() + 2 * MINUTE, now=clock())

    assert await holder(store, run.id) == ("W1", clock() + 2 * MINUTE)


async def test_an_expired_lease_is_taken_over(store: Store, run: Run, clock: Clock) -> None:
    await store.acquire_lease(run.id, "W1", until=clock() + MINUTE, now=clock())
    later = clock() + 2 * MINUTE

    assert await store.acquire_lease(run.id, "W2", until=later + MINUTE, now=later)

    assert await holder(store, run.id) == ("W2", later + MINUTE)


async def test_a_lease_on_an_unknown_run_is_not_acquired(store: Store, clock: Clock) -> None:
    assert not await store.acquire_lease("no-such-run", "W1", until=clock(), now=clock())


async def test_renew_extends_only_a_lease_we_hold(store: Store, run: Run, clock: Clock) -> None:
    await store.acquire_lease(run.id, "W1", until=clock() + MINUTE, now=clock())

    assert await store.renew_lease(run.id, "W1", until=clock() + 3 * MINUTE)
    assert not await store.renew_lease(run.id, "W2", until=clock() + 9 * MINUTE)

    assert await holder(store, run.id) == ("W1", clock() + 3 * MINUTE)


async def test_release_frees_only_a_lease_we_hold(store: Store, run: Run, clock: Clock) -> None:
    await store.acquire_lease(run.id, "W1", until=clock() + MINUTE, now=clock())

    await store.release_lease(run.id, "W2")
    assert await holder(store, run.id) == ("W1", clock() + MINUTE)

    await store.release_lease(run.id, "W1")
    assert await holder(store, run.id) == (None, None)
    assert await store.acquire_lease(run.id, "W2", until=clock() + MINUTE, now=clock())


async def test_runs_to_recover_are_the_runs_nobody_drives(
    store: Store, make_run: MakeRun, append: Append, make_approval: MakeApproval, clock: Clock
) -> None:
    now = clock()
    unleased, mine, expired, live = [await make_run() for _ in range(4)]
    await store.acquire_lease(mine.id, "W1", until=now + MINUTE, now=now)
    await store.acquire_lease(expired.id, "W2", until=now - MINUTE, now=now - 2 * MINUTE)
    await store.acquire_lease(live.id, "W2", until=now + MINUTE, now=now)
    parked_done, parked_waiting, finished = [await make_run() for _ in range(3)]
    for parked, state in [(parked_done, ApprovalState.APPROVED), (parked_waiting, None)]:
        await append(parked.id, status=RunStatus.WAITING_APPROVAL)
        approval = make_approval(parked.id)
        await store.create_approval(approval)
        if state is not None:
            await store.decide_approval(approval.id, state, by="U1", at=now)
    await append(finished.id, status=RunStatus.DONE)

    found = await store.runs_to_recover(now, owner="W1")

    assert sorted(found) == sorted([unleased.id, mine.id, expired.id, parked_done.id])


def undo_event(run_id: str, action: str = "undo_started") -> AuditEvent:
    return AuditEvent(action=action, actor="U1", run_id=run_id, detail={"to_step": 0})


async def test_interrupted_undos_are_runs_whose_undo_began_and_never_ended(
    store: Store, make_run: MakeRun, clock: Clock
) -> None:
    now = clock()
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
    await store.acquire_lease(mine.id, "W1", until=now + MINUTE, now=now)
    await store.acquire_lease(expired.id, "W2", until=now - MINUTE, now=now - 2 * MINUTE)
    await store.acquire_lease(live.id, "W2", until=now + MINUTE, now=now)

    found = await store.interrupted_undos(now, owner="W1")

    assert sorted(found) == sorted([unleased.id, mine.id, expired.id, again.id])


async def test_an_undo_that_died_between_two_compensations_is_found(
    store: Store, make_run: MakeRun, append: Append, make_effect: MakeEffect, clock: Clock
) -> None:
    run = await make_run()
    await store.record_event(undo_event(run.id))
    undo = make_effect(run.id, call_id="undo:c1", compensates="c1")
    await append(run.id, status=RunStatus.DONE, start=[undo])
    done = EffectOutcome(
        run_id=run.id, call_id="undo:c1", status=EffectStatus.COMPLETED, finished_at=clock()
    )
    await store.commit(Batch(run_id=run.id, finish=[done]))

    assert await store.interrupted_undos(clock(), owner="W1") == [run.id]
