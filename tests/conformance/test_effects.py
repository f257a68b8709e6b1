"""The effect ledger: started before the tool runs, finished once, never run twice."""

from __future__ import annotations

from datetime import datetime
from typing import Any

import pytest

from store import Batch
from store import Committed
from store import Effect
from store import EffectOutcome
from store import EffectStatus
from store import Reversibility
from store import Run
from store import Store
from store import errors

from .builders import Append
from .builders import Clock
from .builders import MakeEffect
from .builders import MakeRun


def outcome(effect: Effect, status: EffectStatus, at: datetime, **fields: Any) -> EffectOutcome:
    return EffectOutcome(
        run_id=effect.run_id, call_id=effect.call_id, status=status, finished_at=at, **fields
    )


async def finish(store: Store, effect: Effect, status: EffectStatus, at: datetime) -> None:
    result = {"refund_id": f"re_{effect.call_id}"} if status == EffectStatus.COMPLETED else None
    done = outcome(effect, status, at, result=result)
    await store.commit(Batch(run_id=effect.run_id, finish=[done]))


async def start_and_finish(
    store: Store, effect: Effect, status: EffectStatus, at: datetime
) -> None:
    """Start `effect` in one batch, then finish it with `status` in the next."""
    await store.commit(Batch(run_id=effect.run_id, start=[effect]))
    await finish(store, effect, status, at)


async def started_again(
    store: Store,
    clock: Clock,
    status: EffectStatus,
    make_effect: MakeEffect,
    run_id: str,
    **fields: Any,
) -> tuple[Effect, Effect, Committed]:
    """An effect of `run_id` with `fields`, started and finished with `status`; then another
    one with the same fields, started: both, and what the store said to the second start."""
    first = make_effect(run_id, **fields)
    await start_and_finish(store, first, status, clock())
    again = make_effect(run_id, **fields)
    return first, again, await store.commit(Batch(run_id=run_id, start=[again]))


# start


async def test_a_started_effect_is_recorded_as_started(
    store: Store, run: Run, append: Append, make_effect: MakeEffect
) -> None:
    effect = make_effect(run.id, compensator=None, approval_id="appr-1")

    committed = await append(run.id, start=[effect])

    assert committed.preempted == {}
    assert await store.get_effect(run.id, effect.call_id) == effect  # status: started


async def test_starting_one_call_id_twice_is_refused(
    store: Store, run: Run, append: Append, make_effect: MakeEffect
) -> None:
    effect = make_effect(run.id)
    await append(run.id, start=[effect])

    with pytest.raises(errors.AlreadyExists):
        await store.commit(Batch(run_id=run.id, start=[effect]))


async def test_an_effect_completed_in_the_lineage_preempts_a_new_start(
    store: Store, run: Run, make_effect: MakeEffect, clock: Clock
) -> None:
    first, again, committed = await started_again(
        store, clock, EffectStatus.COMPLETED, make_effect, run.id, idempotency_key="refund-4471"
    )

    assert committed.preempted == {again.call_id: await store.get_effect(run.id, first.call_id)}
    assert committed.preempted[again.call_id].result == {"refund_id": f"re_{first.call_id}"}
    with pytest.raises(errors.NotFound):
        await store.get_effect(run.id, again.call_id)


async def test_a_fork_is_preempted_by_its_parents_completed_effect(
    store: Store, run: Run, make_run: MakeRun, make_effect: MakeEffect, clock: Clock
) -> None:
    first = make_effect(run.id, idempotency_key="refund-4471")
    await start_and_finish(store, first, EffectStatus.COMPLETED, clock())
    fork = await make_run(lineage_id=run.lineage_id, parent_id=run.id, fork_step=1)
    again = make_effect(fork.id, lineage_id=run.lineage_id, idempotency_key="refund-4471")

    committed = await store.commit(Batch(run_id=fork.id, start=[again]))

    assert list(committed.preempted) == [again.call_id]
    assert committed.preempted[again.call_id].run_id == run.id
    assert await store.list_effects(fork.id) == []


async def test_another_lineage_is_not_preempted(
    store: Store, run: Run, make_run: MakeRun, make_effect: MakeEffect, clock: Clock
) -> None:
    first = make_effect(run.id, idempotency_key="refund-4471")
    await start_and_finish(store, first, EffectStatus.COMPLETED, clock())
    stranger = await make_run()
    again = make_effect(stranger.id, idempotency_key="refund-4471")

    committed = await store.commit(Batch(run_id=stranger.id, start=[again]))

    assert committed.preempted == {}
    assert (await store.get_effect(stranger.id, again.call_id)).status == EffectStatus.STARTED


async def test_a_read_effect_is_never_preempted(
    store: Store, run: Run, make_effect: MakeEffect, clock: Clock
) -> None:
    read = {"tool": "get_order", "idempotency_key": "get-4471", "reversibility": Reversibility.READ}
    _first, again, committed = await started_again(
        store, clock, EffectStatus.COMPLETED, make_effect, run.id, **read
    )

    assert committed.preempted == {}
    assert (await store.get_effect(run.id, again.call_id)).status == EffectStatus.STARTED


async def test_a_failed_effect_does_not_preempt(
    store: Store, run: Run, make_effect: MakeEffect, clock: Clock
) -> None:
    first, again, committed = await started_again(
        store, clock, EffectStatus.FAILED, make_effect, run.id, idempotency_key="refund-4471"
    )

    assert (committed.preempted, committed.blocked) == ({}, {})
    assert [e.call_id for e in await store.list_effects(run.id)] == [first.call_id, again.call_id]


@pytest.mark.parametrize("status", [EffectStatus.IN_DOUBT, None])
async def test_the_same_key_running_or_in_doubt_blocks_a_second_start(
    store: Store, run: Run, make_effect: MakeEffect, clock: Clock, status: EffectStatus | None
) -> None:
    first = make_effect(run.id, idempotency_key="refund-4471")
    await store.commit(Batch(run_id=run.id, start=[first]))
    if status is not None:
        await finish(store, first, status, clock())
    again = make_effect(run.id, idempotency_key="refund-4471")

    committed = await store.commit(Batch(run_id=run.id, start=[again]))

    assert committed.preempted == {}
    assert committed.blocked[again.call_id].call_id == first.call_id
    assert [e.call_id for e in await store.list_effects(run.id)] == [first.call_id]


async def test_an_idempotent_effect_may_start_while_its_key_is_in_doubt(
    store: Store, run: Run, make_effect: MakeEffect, clock: Clock
) -> None:
    _first, _again, committed = await started_again(
        store,
        clock,
        EffectStatus.IN_DOUBT,
        make_effect,
        run.id,
        idempotency_key="charge-INV-1",
        idempotent=True,
    )

    assert (committed.preempted, committed.blocked) == ({}, {})
    assert len(await store.list_effects(run.id)) == 2


# finish


@pytest.mark.parametrize(
    "status", [EffectStatus.COMPLETED, EffectStatus.FAILED, EffectStatus.IN_DOUBT]
)
async def test_finish_records_how_a_started_effect_ended(
    store: Store, run: Run, make_effect: MakeEffect, clock: Clock, status: EffectStatus
) -> None:
    effect = make_effect(run.id)
    await store.commit(Batch(run_id=run.id, start=[effect]))
    done = outcome(effect, status, clock(), result={"id": "re_1", "amounts": [1, 2.5]}, error="e")

    await store.commit(Batch(run_id=run.id, finish=[done]))

    got = await store.get_effect(run.id, effect.call_id)
    assert (got.status, got.result, got.error, got.finished_at) == (
        status,
        {"id": "re_1", "amounts": [1, 2.5]},
        "e",
        clock(),
    )


async def test_an_in_doubt_effect_can_still_be_finished(
    store: Store, run: Run, make_effect: MakeEffect, clock: Clock
) -> None:
    effect = make_effect(run.id)
    await start_and_finish(store, effect, EffectStatus.IN_DOUBT, clock())

    await finish(store, effect, EffectStatus.COMPLETED, clock())

    assert (await store.get_effect(run.id, effect.call_id)).status == EffectStatus.COMPLETED


@pytest.mark.parametrize("first", [EffectStatus.COMPLETED, EffectStatus.FAILED])
async def test_finishing_an_ended_effect_again_is_a_conflict_and_changes_nothing(
    store: Store, run: Run, make_effect: MakeEffect, clock: Clock, first: EffectStatus
) -> None:
    effect = make_effect(run.id)
    await start_and_finish(store, effect, first, clock())
    ended = await store.get_effect(run.id, effect.call_id)

    with pytest.raises(errors.Conflict):
        await finish(store, effect, EffectStatus.IN_DOUBT, clock())

    assert await store.get_effect(run.id, effect.call_id) == ended


async def test_finishing_an_unknown_effect_is_a_conflict_and_the_batch_is_undone(
    store: Store, run: Run, append: Append, make_effect: MakeEffect, clock: Clock
) -> None:
    ghost = make_effect(run.id)

    with pytest.raises(errors.Conflict):
        await append(run.id, finish=[outcome(ghost, EffectStatus.COMPLETED, clock())])

    assert len(await store.history(run.id)) == 1


async def compensation_started(
    store: Store, run: Run, make_effect: MakeEffect, clock: Clock
) -> tuple[Effect, Effect]:
    """A completed reversible refund of `run`, and its compensation ("reverse"), started."""
    refund = make_effect(run.id, reversibility=Reversibility.REVERSIBLE, compensator="reverse")
    await start_and_finish(store, refund, EffectStatus.COMPLETED, clock())
    undo = make_effect(run.id, tool="reverse", compensates=refund.call_id)
    await store.commit(Batch(run_id=run.id, start=[undo]))
    return refund, undo


async def test_a_completed_compensation_marks_the_effect_it_undid(
    store: Store, run: Run, make_effect: MakeEffect, clock: Clock
) -> None:
    refund, undo = await compensation_started(store, run, make_effect, clock)

    await finish(store, undo, EffectStatus.COMPLETED, clock())

    assert (await store.get_effect(run.id, refund.call_id)).compensated_by == undo.call_id
    assert (await store.get_effect(run.id, undo.call_id)).compensates == refund.call_id


async def test_a_failed_compensation_leaves_the_effect_uncompensated(
    store: Store, run: Run, make_effect: MakeEffect, clock: Clock
) -> None:
    refund, undo = await compensation_started(store, run, make_effect, clock)

    await finish(store, undo, EffectStatus.FAILED, clock())

    assert (await store.get_effect(run.id, refund.call_id)).compensated_by is None


# get, list, find


async def test_get_unknown_effect_is_not_found(store: Store, run: Run) -> None:
    with pytest.raises(errors.NotFound):
        await store.get_effect(run.id, "no-such-call")


async def test_list_effects_is_in_start_order_and_per_run(
    store: Store, run: Run, make_run: MakeRun, make_effect: MakeEffect
) -> None:
    other = await make_run()
    mine = [make_effect(run.id) for _ in range(3)]
    await store.commit(Batch(run_id=run.id, start=mine[:2]))
    await store.commit(Batch(run_id=other.id, start=[make_effect(other.id)]))
    await store.commit(Batch(run_id=run.id, start=mine[2:]))

    assert await store.list_effects(run.id) == mine


async def test_find_effect_returns_only_a_completed_effect_of_the_lineage(
    store: Store, run: Run, make_effect: MakeEffect, clock: Clock
) -> None:
    effect = make_effect(run.id, idempotency_key="refund-4471")
    await store.commit(Batch(run_id=run.id, start=[effect]))
    assert await store.find_effect(run.lineage_id, "refund-4471") is None

    await finish(store, effect, EffectStatus.COMPLETED, clock())

    found = await store.find_effect(run.lineage_id, "refund-4471")
    assert found == await store.get_effect(run.id, effect.call_id)
    assert await store.find_effect("other-lineage", "refund-4471") is None
    assert await store.find_effect(run.lineage_id, "other-key") is None


async def test_find_effect_leaves_reads_out(
    store: Store, run: Run, make_effect: MakeEffect, clock: Clock
) -> None:
    read = make_effect(run.id, idempotency_key="lookup-1", reversibility=Reversibility.READ)
    await start_and_finish(store, read, EffectStatus.COMPLETED, clock())
    assert (await store.get_effect(run.id, read.call_id)).status == EffectStatus.COMPLETED
    assert await store.find_effect(run.lineage_id, "lookup-1") is None
