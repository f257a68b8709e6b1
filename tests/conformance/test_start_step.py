"""A step that starts mutating effects, written with its checkpoint (as the engine writes
it): every claim the ledger makes of a key holds the same on every backend, whether the
store writes the step as its transaction body or as one round trip (PostgreSQL's
`start_step`): a repeat is preempted, other arguments conflict, a call in flight blocks, an
undone effect's key takes its next generation, and a step that fails a check writes
nothing."""

from __future__ import annotations

from datetime import timedelta

import pytest

from store import Batch
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
from .builders import checkpoint
from .builders import completed


async def done(append: Append, effect: Effect, clock: Clock) -> Effect:
    """`effect` started in one step and completed in the next, as the engine writes them."""
    await append(effect.run_id, start=[effect])
    await append(effect.run_id, finish=[completed(effect, clock())])
    return effect


async def test_a_repeat_of_a_completed_call_is_preempted_and_not_started(
    store: Store, run: Run, append: Append, make_effect: MakeEffect, clock: Clock
) -> None:
    first = await done(append, make_effect(run.id, idempotency_key="refund-4471"), clock)
    again = make_effect(run.id, idempotency_key="refund-4471")

    committed = await append(run.id, start=[again])

    assert committed.preempted == {again.call_id: await store.get_effect(run.id, first.call_id)}
    assert (committed.conflicts, committed.blocked, committed.keys) == ({}, {}, {})
    with pytest.raises(errors.NotFound):
        await store.get_effect(run.id, again.call_id)


async def test_the_same_key_with_other_arguments_conflicts_in_any_lineage(
    store: Store, run: Run, make_run: MakeRun, append: Append, make_effect: MakeEffect
) -> None:
    other_run = await make_run()
    elsewhere = make_effect(other_run.id, idempotency_key="refund-4471")
    await append(other_run.id, start=[elsewhere])  # in flight, in another lineage
    edited = make_effect(run.id, idempotency_key="refund-4471", args={"amount_cents": 9900})

    committed = await append(run.id, start=[edited])

    assert committed.conflicts == {
        edited.call_id: await store.get_effect(other_run.id, elsewhere.call_id)
    }
    with pytest.raises(errors.NotFound):
        await store.get_effect(run.id, edited.call_id)


async def test_a_call_in_flight_blocks_its_repeat_unless_the_tool_is_idempotent(
    store: Store, run: Run, append: Append, make_effect: MakeEffect
) -> None:
    running = make_effect(run.id, idempotency_key="charge-1")
    await append(run.id, start=[running])
    again = make_effect(run.id, idempotency_key="charge-1")
    safe = make_effect(run.id, idempotency_key="charge-1", idempotent=True)

    blocked = await append(run.id, start=[again])
    started = await append(run.id, start=[safe])

    assert blocked.blocked == {again.call_id: await store.get_effect(run.id, running.call_id)}
    assert (started.blocked, started.preempted, started.conflicts) == ({}, {}, {})
    assert (await store.get_effect(run.id, safe.call_id)).status == EffectStatus.STARTED


async def test_an_undone_effects_key_takes_its_next_generation(
    store: Store, run: Run, append: Append, make_effect: MakeEffect, clock: Clock
) -> None:
    first = await done(append, make_effect(run.id, idempotency_key="refund-4471"), clock)
    undo = make_effect(
        run.id, idempotency_key="undo-4471", compensates=first.call_id, tool="reverse_refund"
    )
    await done(append, undo, clock)
    again = make_effect(run.id, idempotency_key="refund-4471")

    committed = await append(run.id, start=[again])

    assert committed.keys == {again.call_id: "refund-4471#2"}
    assert committed.preempted == {}
    assert (await store.get_effect(run.id, again.call_id)).idempotency_key == "refund-4471#2"


async def test_reads_and_mutating_starts_of_one_step_are_all_written(
    store: Store, run: Run, append: Append, make_effect: MakeEffect
) -> None:
    look = make_effect(run.id, reversibility=Reversibility.READ, tool="lookup_order")
    pay = make_effect(run.id)

    committed = await append(run.id, start=[look, pay])

    assert (committed.preempted, committed.conflicts, committed.blocked) == ({}, {}, {})
    assert [e.call_id for e in await store.list_effects(run.id)] == [look.call_id, pay.call_id]


async def test_a_start_under_a_lost_lease_or_a_stale_seq_writes_nothing(
    store: Store, run: Run, append: Append, make_effect: MakeEffect, clock: Clock
) -> None:
    now = clock()
    epoch = await store.acquire_lease(run.id, "W1", until=now + timedelta(seconds=60), now=now)
    stolen = make_effect(run.id)
    stale = make_effect(run.id)
    seq = (await store.load_state(run.id)).seq
    next_one = checkpoint(run.id, seq + 1, now)

    with pytest.raises(errors.LeaseLost):
        await store.commit(Batch(run_id=run.id, owner="W2", checkpoints=[next_one], start=[stolen]))
    await append(run.id, owner="W1", epoch=epoch)  # the seq moves on
    with pytest.raises(errors.Conflict):
        await store.commit(
            Batch(run_id=run.id, owner="W1", epoch=epoch, checkpoints=[next_one], start=[stale])
        )

    assert await store.list_effects(run.id) == []
    assert (await store.load_state(run.id)).seq == seq + 1


async def test_a_step_that_finishes_one_effect_and_starts_the_next_does_both(
    store: Store, run: Run, append: Append, make_effect: MakeEffect, clock: Clock
) -> None:
    first, second = make_effect(run.id), make_effect(run.id)
    await append(run.id, start=[first])

    await append(run.id, finish=[completed(first, clock())], start=[second])
    with pytest.raises(errors.Conflict):  # finishing what is not in flight refuses the step
        await append(
            run.id,
            finish=[EffectOutcome(
                run_id=run.id, call_id=first.call_id, status=EffectStatus.FAILED,
                finished_at=clock(),
            )],
            start=[make_effect(run.id)],
        )  # fmt: skip

    statuses = {e.call_id: e.status for e in await store.list_effects(run.id)}
    assert statuses == {first.call_id: EffectStatus.COMPLETED, second.call_id: EffectStatus.STARTED}
