"""Commit: one batch is one transaction; its checkpoint is appended by compare-and-set on seq,
and a worker without the run's lease cannot write."""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from datetime import datetime
from datetime import timedelta

import pytest

from store import AuditEvent
from store import Batch
from store import Committed
from store import Effect
from store import EffectStatus
from store import Reversibility
from store import Run
from store import RunStatus
from store import Store
from store import Usage
from store import errors

from .builders import Append
from .builders import Clock
from .builders import MakeEffect
from .builders import MakeOneOfEach
from .builders import MakeRun
from .builders import checkpoint
from .builders import completed
from .builders import text

# the checkpoint


async def test_commit_appends_the_next_checkpoint(store: Store, run: Run, clock: Clock) -> None:
    cp = checkpoint(run.id, 1, clock(), messages=(text("hello"),), usage=Usage(steps=1))

    assert await store.commit(Batch(run_id=run.id, checkpoints=[cp])) == Committed()

    assert (await store.history(run.id))[-1] == cp


@pytest.mark.parametrize("seq", [0, 1, 3, 7], ids=["seq-0", "latest", "gap", "far"])
async def test_commit_refuses_a_seq_other_than_latest_plus_one(
    store: Store, run: Run, append: Append, clock: Clock, seq: int
) -> None:
    await append(run.id, [text("one")])  # latest is seq 1
    before = await store.history(run.id)

    with pytest.raises(errors.Conflict):
        await store.commit(Batch(run_id=run.id, checkpoints=[checkpoint(run.id, seq, clock())]))

    assert await store.history(run.id) == before


@pytest.mark.parametrize("seq", [1, 3], ids=["duplicate", "gap"])
async def test_a_refused_checkpoint_writes_nothing_of_its_batch(
    store: Store,
    run: Run,
    append: Append,
    make_effect: MakeEffect,
    one_of_each: MakeOneOfEach,
    clock: Clock,
    seq: int,
) -> None:
    in_flight = make_effect(run.id)
    await append(run.id, [text("one")], start=[in_flight])
    before = await _snapshot_of(store, run.id)
    new_effect, approval, page = one_of_each(run.id)
    batch = Batch(
        run_id=run.id,
        checkpoints=[checkpoint(run.id, seq, clock(), messages=(text("lost"),))],
        finish=[completed(in_flight, clock())],
        start=[new_effect],
        request=[approval],
        pages=[page],
        events=[AuditEvent(action="resume", actor="W1", run_id=run.id, at=clock())],
    )

    with pytest.raises(errors.Conflict):
        await store.commit(batch)

    assert await _snapshot_of(store, run.id) == before
    await _assert_absent(store, run.id, new_effect, approval.id, page.id)


async def test_several_checkpoints_in_one_batch_are_appended_in_order(
    store: Store, run: Run, clock: Clock
) -> None:
    results = checkpoint(run.id, 1, clock(), messages=(text("results"),))
    reply = checkpoint(run.id, 2, clock(), step=2, messages=(text("reply"),))

    await store.commit(Batch(run_id=run.id, checkpoints=[results, reply]))

    assert (await store.history(run.id))[-2:] == [results, reply]
    assert (await store.load_state(run.id)).seq == 2


async def test_a_broken_chain_of_checkpoints_writes_none_of_them(
    store: Store, run: Run, clock: Clock
) -> None:
    first = checkpoint(run.id, 1, clock(), messages=(text("first"),))
    gap = checkpoint(run.id, 3, clock(), messages=(text("gap"),))

    with pytest.raises(errors.Conflict):
        await store.commit(Batch(run_id=run.id, checkpoints=[first, gap]))

    assert [cp.seq for cp in await store.history(run.id)] == [0]


async def test_two_concurrent_appends_of_one_seq_have_one_winner(
    store: Store, run: Run, clock: Clock
) -> None:
    batches = [
        Batch(run_id=run.id, checkpoints=[checkpoint(run.id, 1, clock(), messages=(text(w),))])
        for w in ("a", "b", "c", "d")
    ]

    outcomes = await asyncio.gather(*map(store.commit, batches), return_exceptions=True)

    winners = [b for b, o in zip(batches, outcomes, strict=True) if isinstance(o, Committed)]
    assert len(winners) == 1
    assert all(isinstance(o, errors.Conflict) for o in outcomes if not isinstance(o, Committed))
    assert (await store.history(run.id))[-1] == winners[0].checkpoints[0]


async def test_a_refused_commit_does_not_undo_a_concurrent_one(
    store: Store, make_run: MakeRun, clock: Clock
) -> None:
    good, bad = await make_run(), await make_run()
    good_cp = checkpoint(good.id, 1, clock())

    outcomes = await asyncio.gather(
        store.commit(Batch(run_id=bad.id, checkpoints=[checkpoint(bad.id, 5, clock())])),
        store.commit(Batch(run_id=good.id, checkpoints=[good_cp])),
        return_exceptions=True,
    )

    assert isinstance(outcomes[0], errors.Conflict)
    assert outcomes[1] == Committed()
    assert (await store.history(good.id))[-1] == good_cp


async def test_commit_mirrors_the_checkpoint_status_onto_the_run(
    store: Store, run: Run, append: Append
) -> None:
    await append(run.id, status=RunStatus.FAILED)

    assert (await store.get_run(run.id)).status == RunStatus.FAILED


# lease fencing


async def assert_wrote_nothing(store: Store, run_id: str) -> None:
    """The run has only the checkpoint it opened with: no step, effect or audit event."""
    assert len(await store.history(run_id)) == 1
    assert await store.list_effects(run_id) == []
    assert await store.list_events(run_id=run_id) == []


async def test_commit_by_a_worker_without_the_lease_is_refused_and_writes_nothing(
    store: Store, run: Run, make_effect: MakeEffect, clock: Clock
) -> None:
    assert await store.acquire_lease(run.id, "W1", until=_later(clock, 60), now=clock())
    effect = make_effect(run.id)
    batch = Batch(
        run_id=run.id,
        owner="W2",
        checkpoints=[checkpoint(run.id, 1, clock())],
        start=[effect],
        events=[AuditEvent(action="resume", actor="W2", run_id=run.id, at=clock())],
    )

    with pytest.raises(errors.LeaseLost):
        await store.commit(batch)

    await assert_wrote_nothing(store, run.id)


async def test_commit_by_the_lease_holder_is_accepted(store: Store, run: Run, clock: Clock) -> None:
    assert await store.acquire_lease(run.id, "W1", until=_later(clock, 60), now=clock())

    await store.commit(_first_step_by_w1(run.id, clock))

    assert (await store.load_state(run.id)).seq == 1


async def test_commit_with_an_owner_on_an_unleased_run_is_lease_lost(
    store: Store, run: Run, clock: Clock
) -> None:
    with pytest.raises(errors.LeaseLost):
        await store.commit(_first_step_by_w1(run.id, clock))

    assert (await store.load_state(run.id)).seq == 0


async def test_a_worker_whose_lease_was_taken_over_is_fenced_off(
    store: Store, run: Run, clock: Clock
) -> None:
    assert await store.acquire_lease(run.id, "W1", until=_later(clock, -10), now=clock())
    assert await store.acquire_lease(run.id, "W2", until=_later(clock, 90), now=clock())

    with pytest.raises(errors.LeaseLost):
        await store.commit(_first_step_by_w1(run.id, clock))


async def test_a_write_from_an_older_epoch_of_the_same_worker_is_fenced_off(
    store: Store, run: Run, make_effect: MakeEffect, clock: Clock
) -> None:
    """A worker restarted under the same id takes the lease again in a new epoch; the old
    process, frozen rather than dead, wakes up and writes with the epoch it held: refused,
    checkpoint, effect and event alike, in the one transaction."""
    old = await store.acquire_lease(run.id, "W1", until=_later(clock, 60), now=clock())
    new = await store.acquire_lease(run.id, "W1", until=_later(clock, 60), now=clock())
    assert old is not None
    assert new == old + 1
    stale = Batch(
        run_id=run.id,
        owner="W1",
        epoch=old,
        checkpoints=[checkpoint(run.id, 1, clock())],
        start=[make_effect(run.id)],
        events=[AuditEvent(action="resume", actor="W1", run_id=run.id, at=clock())],
    )

    with pytest.raises(errors.LeaseLost, match="epoch"):
        await store.commit(stale)

    await assert_wrote_nothing(store, run.id)
    await store.commit(
        Batch(run_id=run.id, owner="W1", epoch=new, checkpoints=[checkpoint(run.id, 1, clock())])
    )
    assert (await store.load_state(run.id)).seq == 1


async def test_a_stale_epoch_among_read_steps_committed_together_is_refused_alone(
    store: Store, make_run: MakeRun, make_effect: MakeEffect, clock: Clock
) -> None:
    """Read steps of many runs are written together (on SQLite, one group-commit
    transaction; on PostgreSQL, their `commit_step` statements in one transaction,
    `store.postgres.together`, tried again one by one when one is refused): each batch's
    lease epoch is still checked for its own run, so the one
    from a superseded epoch is refused, checkpoint and read effect alike, and its
    neighbours are written."""
    runs = [await make_run() for _ in range(4)]
    epochs = [await _lease_to_w1(store, run.id, clock) for run in runs]
    stale = runs[1]  # the same worker id took this one again: the first epoch is fenced off
    taken = await store.acquire_lease(stale.id, "W1", until=_later(clock, 60), now=clock())
    assert taken == epochs[1] + 1
    batches = _first_steps_starting(
        runs,
        epochs,
        clock,
        lambda run_id: make_effect(run_id, tool="lookup", reversibility=Reversibility.READ),
    )

    await _commit_together_all_but(store, batches, stale)
    for run in (r for r in runs if r is not stale):
        assert (await store.load_state(run.id)).seq == 1
        assert [e.tool for e in await store.list_effects(run.id)] == ["lookup"]


async def test_a_stale_epoch_among_effects_started_together_is_refused_alone(
    store: Store, make_run: MakeRun, make_effect: MakeEffect, clock: Clock
) -> None:
    """Steps that start mutating effects, of many runs at once, are written together as
    read steps are (on PostgreSQL, their `start_step` statements in one transaction, each
    with its own lease, epoch and seq checks and its own lineage and key locks): the one
    from a superseded epoch is refused, checkpoint and effect alike, and its neighbours'
    effects are started, each once."""
    runs = [await make_run() for _ in range(4)]
    epochs = [await _lease_to_w1(store, run.id, clock) for run in runs]
    stale = runs[2]
    assert await store.acquire_lease(stale.id, "W1", until=_later(clock, 60), now=clock())
    batches = _first_steps_starting(runs, epochs, clock, make_effect)

    await _commit_together_all_but(store, batches, stale)
    for run in (r for r in runs if r is not stale):
        assert (await store.load_state(run.id)).seq == 1
        assert [e.status for e in await store.list_effects(run.id)] == [EffectStatus.STARTED]


async def test_one_key_with_other_args_started_by_two_runs_at_once_starts_once(
    store: Store, make_run: MakeRun, make_effect: MakeEffect, clock: Clock
) -> None:
    """Two runs of other lineages start the same idempotency key with other arguments at
    once (on PostgreSQL, possibly in one transaction): the first written starts, and the
    second sees it in flight and is told of the conflict, as if they had committed apart."""
    runs = [await make_run() for _ in range(2)]
    batches = []
    for run, amount in zip(runs, (2500, 2000), strict=True):
        epoch = await store.acquire_lease(run.id, "W1", until=_later(clock, 60), now=clock())
        args = {"order_id": "4471", "amount_cents": amount}
        start = make_effect(run.id, idempotency_key="refund-4471", args=args)
        batches.append(
            Batch(
                run_id=run.id,
                owner="W1",
                epoch=epoch,
                checkpoints=[checkpoint(run.id, 1, clock())],
                start=[start],
            )
        )

    first, second = await asyncio.gather(*map(store.commit, batches))

    assert (first.conflicts, first.preempted) == ({}, {})
    (conflict,) = second.conflicts.values()
    assert (conflict.run_id, conflict.status) == (runs[0].id, EffectStatus.STARTED)
    assert await store.list_effects(runs[1].id) == []


# helpers


async def _lease_to_w1(store: Store, run_id: str, clock: Clock) -> int:
    """W1 takes the run's lease for a minute: its epoch."""
    epoch = await store.acquire_lease(run_id, "W1", until=_later(clock, 60), now=clock())
    assert epoch is not None
    return epoch


async def _commit_together_all_but(store: Store, batches: list[Batch], stale: Run) -> None:
    """The batches committed at once: the stale run's alone is refused, writing nothing."""
    outcomes = await asyncio.gather(*map(store.commit, batches), return_exceptions=True)
    at = [batch.run_id for batch in batches].index(stale.id)
    assert isinstance(outcomes[at], errors.LeaseLost)
    assert [o for i, o in enumerate(outcomes) if i != at] == [Committed()] * (len(batches) - 1)
    assert len(await store.history(stale.id)) == 1
    assert await store.list_effects(stale.id) == []


def _first_steps_starting(
    runs: list[Run], epochs: list[int], clock: Clock, effect: Callable[[str], Effect]
) -> list[Batch]:
    """Each run's first step by W1 under its epoch, starting the effect made for it."""
    return [
        Batch(
            run_id=run.id,
            owner="W1",
            epoch=epoch,
            checkpoints=[checkpoint(run.id, 1, clock())],
            start=[effect(run.id)],
        )
        for run, epoch in zip(runs, epochs, strict=True)
    ]


def _first_step_by_w1(run_id: str, clock: Clock) -> Batch:
    """The run's first step, written by worker W1 (the lease decides whether it may)."""
    return Batch(run_id=run_id, owner="W1", checkpoints=[checkpoint(run_id, 1, clock())])


def _later(clock: Clock, seconds: float) -> datetime:
    return clock() + timedelta(seconds=seconds)


async def _snapshot_of(store: Store, run_id: str) -> list[object]:
    return [
        await store.get_run(run_id),
        await store.history(run_id),
        await store.list_effects(run_id),
        await store.list_approvals(run_id=run_id),
        await store.list_pages(open_only=False),
        await store.list_events(),
    ]


async def _assert_absent(
    store: Store, run_id: str, effect: Effect, approval_id: str, page_id: str
) -> None:
    with pytest.raises(errors.NotFound):
        await store.get_effect(run_id, effect.call_id)
    with pytest.raises(errors.NotFound):
        await store.get_approval(approval_id)
    with pytest.raises(errors.NotFound):
        await store.get_page(page_id)
