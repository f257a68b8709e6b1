"""The run queue through the store's door: a new run is ready, a worker's claim takes the
leases of the oldest ready runs nobody holds, within its limit; a decision that leaves a
parked run nothing pending makes it ready; requeueing finds the runs nobody drives."""

from __future__ import annotations

import asyncio
from datetime import timedelta

from store import Approval
from store import ApprovalState
from store import AuditEvent
from store import Batch
from store import Checkpoint
from store import Run
from store import RunStatus
from store import Store
from store import errors
from store.base import Claims
from store.base import Ruling
from tests.conftest import Clock as HandClock

from .builders import Append
from .builders import MakeApproval
from .builders import MakeRun
from .test_outbox import drain

LEASE = timedelta(seconds=60)


async def claims(store: Store, owner: str, limit: int = 10) -> Claims:
    now = HandClock()()
    return await store.claim_runs(owner, limit=limit, until=now + LEASE, now=now)


async def claim(store: Store, owner: str, limit: int = 10) -> list[tuple[str, int]]:
    """Each claimed run and its lease's epoch."""
    return [(c.run_id, c.epoch) for c in await claims(store, owner, limit)]


async def test_new_runs_are_claimed_oldest_first_within_the_limit_and_once(
    store: Store, make_run: MakeRun
) -> None:
    runs = [await make_run() for _ in range(3)]

    first = await claim(store, "W1", limit=2)
    second = await claim(store, "W2", limit=2)

    assert first == [(runs[0].id, 1), (runs[1].id, 1)]
    assert second == [(runs[2].id, 1)]
    assert await claim(store, "W3") == []
    assert [(await store.get_run(r.id)).lease_owner for r in runs] == ["W1", "W1", "W2"]
    assert await store.ready_runs() == (0, None)


async def test_a_claim_says_whether_more_ready_runs_may_wait(
    store: Store, make_run: MakeRun, append: Append, make_approval: MakeApproval
) -> None:
    """A claim that took fewer runs than its limit found the queue empty: the run queue
    asks no more until woken (one statement a pass, not two)."""
    ready = [await make_run() for _ in range(3)]
    parked = await make_run()  # ready, with nothing to drive: it leaves the queue unclaimed
    await append(parked.id, status=RunStatus.WAITING_APPROVAL)
    await store.create_approval(make_approval(parked.id))

    full = await claims(store, "W1", limit=2)
    rest = await claims(store, "W1", limit=5)
    empty = await claims(store, "W1", limit=5)

    assert ([c.run_id for c in full], full.more) == ([ready[0].id, ready[1].id], True)
    assert ([c.run_id for c in rest], rest.more) == ([ready[2].id], False)
    assert (list(empty), empty.more) == ([], False)


async def test_a_claimed_lease_fences_like_an_acquired_one(store: Store, run: Run) -> None:
    [(_, epoch)] = await claim(store, "W1")
    checkpoint = Checkpoint(
        run_id=run.id, seq=1, step=1, status=RunStatus.RUNNING, created_at=run.created_at
    )

    stale = Batch(run_id=run.id, owner="W1", epoch=epoch - 1, checkpoints=[checkpoint])
    try:
        await store.commit(stale)
        raise AssertionError("a write from an older epoch was accepted")
    except errors.LeaseLost:
        pass
    await store.commit(Batch(run_id=run.id, owner="W1", epoch=epoch, checkpoints=[checkpoint]))

    assert (await store.load_state(run.id)).seq == 1


async def test_a_run_whose_lease_was_taken_leaves_the_queue(store: Store, run: Run) -> None:
    now = HandClock()()
    await store.acquire_lease(run.id, "W1", until=now + LEASE, now=now)

    assert await claim(store, "W2") == []
    assert await store.ready_runs() == (0, None)


async def test_a_lease_given_back_mid_run_puts_the_run_back_in_the_queue(
    store: Store, make_run: MakeRun, append: Append
) -> None:
    """A worker that stops (or whose drive failed) hands a running run straight to the next
    worker with room; a parked or finished run it lets go of stays out of the queue."""
    running, parked = await make_run(), await make_run()
    [(_, epoch), _] = await claim(store, "W1")
    await append(parked.id, status=RunStatus.WAITING_APPROVAL)

    await store.release_lease(running.id, "W1", epoch=epoch)
    await store.release_lease(parked.id, "W1")

    assert await claim(store, "W2") == [(running.id, epoch + 1)]
    assert await claim(store, "W3") == []


async def parked_on_two(
    store: Store, make_run: MakeRun, append: Append, make_approval: MakeApproval
) -> tuple[Run, Approval, Approval]:
    """A run W1 claimed, parked on two pending approvals and let go of: out of the queue."""
    run = await make_run()
    await claim(store, "W1")
    await append(run.id, status=RunStatus.WAITING_APPROVAL)
    first, second = make_approval(run.id), make_approval(run.id)
    await store.create_approval(first)
    await store.create_approval(second)
    await store.release_lease(run.id, "W1")
    return run, first, second


async def test_a_decision_that_leaves_nothing_pending_makes_the_parked_run_ready(
    store: Store, make_run: MakeRun, append: Append, make_approval: MakeApproval
) -> None:
    run, first, second = await parked_on_two(store, make_run, append, make_approval)
    now = HandClock()()

    await store.decide_approval(first.id, Ruling(ApprovalState.APPROVED, by="U1", at=now))
    assert await claim(store, "W2") == []  # still waiting for the second
    await store.decide_approval(second.id, Ruling(ApprovalState.DECLINED, by="U1", at=now))

    assert await claim(store, "W2") == [(run.id, 2)]


async def test_a_persons_decision_that_leaves_nothing_pending_makes_the_parked_run_ready(
    store: Store, make_run: MakeRun, append: Append, make_approval: MakeApproval
) -> None:
    """As above, by `cast_vote` with its audit event, as a click decides (on PostgreSQL one
    statement, `decide_at_once`): each decision audited and announced once."""
    run, first, second = await parked_on_two(store, make_run, append, make_approval)

    await person_decides(store, first.id, ApprovalState.APPROVED)
    assert await claim(store, "W2") == []  # still waiting for the second
    await person_decides(store, second.id, ApprovalState.DECLINED)

    assert await claim(store, "W2") == [(run.id, 2)]
    audit = [(e.approval_id, e.action) for e in await store.list_audit(run_id=run.id)]
    assert audit.count((first.id, "approval_approved")) == 1
    assert audit.count((second.id, "approval_declined")) == 1
    decided = [subject for topic, subject in await drain(store) if topic == "approval_decided"]
    assert sorted(decided) == sorted([first.id, second.id])


async def person_decides(store: Store, approval_id: str, state: ApprovalState) -> None:
    now = HandClock()()
    event = AuditEvent(
        action=f"approval_{state.value}",
        actor="U1",
        approval_id=approval_id,
        run_id=(await store.get_approval(approval_id)).run_id,
        at=now,
    )
    await store.cast_vote(approval_id, Ruling(state, by="U1", at=now), event=event)


async def test_a_ready_run_with_nothing_to_drive_leaves_the_queue_unclaimed(
    store: Store, make_run: MakeRun, append: Append, make_approval: MakeApproval
) -> None:
    finished, parked = await make_run(), await make_run()
    await append(finished.id, status=RunStatus.DONE)
    await append(parked.id, status=RunStatus.WAITING_APPROVAL)
    await store.create_approval(make_approval(parked.id))

    assert await claim(store, "W1") == []
    assert await store.ready_runs() == (0, None)
    assert (await store.get_run(parked.id)).lease_owner is None


async def test_requeue_puts_back_the_runs_nobody_drives(
    store: Store, make_run: MakeRun, append: Append, make_approval: MakeApproval
) -> None:
    lapsed, _live, parked_done, parked_waiting = [await make_run() for _ in range(4)]
    assert len(await claim(store, "W1")) == 4
    now = HandClock()()
    await store.acquire_lease(lapsed.id, "W1", until=now - LEASE, now=now)
    for parked in (parked_done, parked_waiting):
        await append(parked.id, status=RunStatus.WAITING_APPROVAL)
        await store.release_lease(parked.id, "W1")
    waiting = make_approval(parked_waiting.id)
    await store.create_approval(waiting)

    assert await store.requeue_runs() == 2
    assert await store.requeue_runs() == 0  # queued already

    claimed = {c.run_id: c.lapsed_owner for c in await claims(store, "W2")}
    assert claimed == {lapsed.id: "W1", parked_done.id: None}  # a takeover, and a run let go


async def test_a_worker_started_again_gives_its_old_leases_back_to_the_queue(
    store: Store, run: Run
) -> None:
    [(_, epoch)] = await claim(store, "W1")

    assert await store.release_own_leases("W1") == 1

    assert await claim(store, "W2") == [(run.id, epoch + 1)]


async def test_a_decided_run_is_made_ready_by_its_id_alone(
    store: Store, make_run: MakeRun, append: Append, make_approval: MakeApproval
) -> None:
    """What the deciding process's queue does once a decision committed (`RunQueue.wake`'s
    `decided`): that run is ready if nothing keeps it waiting, which two decisions committed
    at once may each have missed; no other run is looked at (`requeue_runs` looks at all)."""
    decided, waiting, other = [await make_run() for _ in range(3)]
    assert len(await claim(store, "W1")) == 3
    for parked in (decided, waiting, other):
        await append(parked.id, status=RunStatus.WAITING_APPROVAL)
        await store.release_lease(parked.id, "W1")
    await store.create_approval(make_approval(waiting.id))

    await store.ready_decided_runs([decided.id, waiting.id, "no-such-run"])
    await store.ready_decided_runs([decided.id])  # in the queue already: it stays as it is
    await store.ready_decided_runs([])

    assert (await store.ready_runs())[0] == 1
    assert await claim(store, "W2") == [(decided.id, 2)]
    assert await store.requeue_runs() == 1  # `other` was left for the scan


async def test_clicks_at_once_each_decide_once_and_leave_their_runs_ready(
    store: Store, make_run: MakeRun, append: Append, make_approval: MakeApproval
) -> None:
    """A burst of clicks (on PostgreSQL, the decisions that arrive while one is written go
    together in one transaction, `store.postgres.together`): each approval decided once,
    audited and announced once; a second decision of one approval loses; a run whose two
    approvals were decided together is ready, and so is every other."""
    runs = [await make_run() for _ in range(6)]
    await claim(store, "W1")
    approvals = []
    for run in runs:
        await append(run.id, status=RunStatus.WAITING_APPROVAL)
        approvals.append(make_approval(run.id))
    approvals.append(make_approval(runs[0].id))  # the first run waits on two
    for approval in approvals:
        await store.create_approval(approval)
    for run in runs:
        await store.release_lease(run.id, "W1")

    clicks = [person_decides(store, a.id, ApprovalState.APPROVED) for a in approvals]
    twice = person_decides(store, approvals[3].id, ApprovalState.DECLINED)
    found = await asyncio.gather(*clicks, twice, return_exceptions=True)

    lost = [f for f in found if isinstance(f, BaseException)]
    assert len(lost) == 1, found
    assert isinstance(lost[0], errors.AlreadyDecided), found
    assert sorted(await claim(store, "W2")) == sorted((run.id, 2) for run in runs)
    audit = [(e.approval_id, e.action) for e in await store.list_audit()]
    decided = [subject for topic, subject in await drain(store) if topic == "approval_decided"]
    for approval in approvals:
        verdicts = audit.count((approval.id, "approval_approved"))
        assert verdicts + audit.count((approval.id, "approval_declined")) == 1
        assert decided.count(approval.id) == 1
