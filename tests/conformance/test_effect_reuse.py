"""Effects two runs share (issue 40.2): a run handed another run's recorded effect (the same
key with the same arguments) relies on it, and the store records so, with its audit event, in
the transaction that hands it over: a fork's repeat in the lineage, a call preempted before
it was asked, and, across lineages, a start under a key whose effect another run made (the
outside system dedupes by the key). Steps go through `append` (a checkpoint with the start),
the batch PostgreSQL writes in one statement when nothing is shared. A compensated shared
effect marks each run relying on it once."""

from __future__ import annotations

from datetime import UTC
from datetime import datetime
from datetime import timedelta
from typing import Any

from store import AuditEvent
from store import Batch
from store import Effect
from store import EffectStatus
from store import Reversibility
from store import Run
from store import Store
from store.records import EffectReuse

from .builders import Append
from .builders import Clock
from .builders import MakeApproval
from .builders import MakeEffect
from .builders import MakeRun
from .builders import completed

KEY = "refund:4471:0"


def later(seconds: float = 60) -> datetime:
    return datetime.now(UTC) + timedelta(seconds=seconds)


async def done(store: Store, append: Append, effect: Effect, clock: Clock) -> None:
    """`effect` started in one step and completed in the next."""
    await append(effect.run_id, start=[effect])
    await append(effect.run_id, finish=[completed(effect, clock())])


async def reused_events(store: Store, run_id: str) -> list[dict[str, object]]:
    return [e.detail for e in await store.list_events(run_id=run_id) if e.action == "effect_reused"]


async def test_a_fork_handed_its_parents_effect_relies_on_it(
    store: Store, run: Run, make_run: MakeRun, make_effect: MakeEffect, append: Append, clock: Clock
) -> None:
    first = make_effect(run.id, idempotency_key=KEY)
    await done(store, append, first, clock)
    fork = await make_run(lineage_id=run.lineage_id, parent_id=run.id, fork_step=0)
    again = make_effect(fork.id, lineage_id=run.lineage_id, idempotency_key=KEY)

    committed = await append(fork.id, start=[again])

    assert list(committed.preempted) == [again.call_id]
    [reuse] = await store.effect_group(run.id, first.call_id)
    assert (reuse.run_id, reuse.call_id, reuse.from_run_id, reuse.from_call_id) == (
        fork.id,
        again.call_id,
        run.id,
        first.call_id,
    )
    assert (reuse.tool, reuse.idempotency_key, reuse.undone_at) == ("issue_refund", KEY, None)
    assert await reused_events(store, fork.id) == [
        {
            "call_id": again.call_id,
            "tool": "issue_refund",
            "from_run": run.id,
            "from_call": first.call_id,
            "idempotency_key": KEY,
        }
    ]


async def test_a_call_preempted_before_it_is_asked_relies_on_the_effect(
    store: Store,
    run: Run,
    make_run: MakeRun,
    make_effect: MakeEffect,
    make_approval: MakeApproval,
    append: Append,
    clock: Clock,
) -> None:
    first = make_effect(run.id, idempotency_key=KEY)
    await done(store, append, first, clock)
    fork = await make_run(lineage_id=run.lineage_id, parent_id=run.id, fork_step=0)
    asked = make_approval(fork.id, lineage_id=run.lineage_id, idempotency_key=KEY, args=first.args)

    committed = await store.commit(Batch(run_id=fork.id, request=[asked]))

    assert list(committed.preempted) == [asked.call_id]
    [reuse] = await store.effect_group(run.id, first.call_id)
    assert (reuse.run_id, reuse.call_id) == (fork.id, asked.call_id)


async def test_another_lineage_starting_the_same_key_and_arguments_relies_on_the_first(
    store: Store, run: Run, make_run: MakeRun, make_effect: MakeEffect, append: Append, clock: Clock
) -> None:
    first = make_effect(run.id, idempotency_key=KEY)
    await done(store, append, first, clock)
    other = await make_run()
    again = make_effect(other.id, idempotency_key=KEY)

    committed = await append(other.id, start=[again])

    assert committed.preempted == committed.conflicts == {}
    assert (await store.get_effect(other.id, again.call_id)).status == EffectStatus.STARTED
    [reuse] = await store.effect_group(run.id, first.call_id)
    assert (reuse.run_id, reuse.from_run_id) == (other.id, run.id)
    # Seen from the run relying on it, the group is the same: undoing either undoes both.
    assert await store.effect_group(other.id, again.call_id) == [reuse]
    assert len(await reused_events(store, other.id)) == 1


async def test_a_third_run_relies_on_the_first_and_all_three_are_one_group(
    store: Store, run: Run, make_run: MakeRun, make_effect: MakeEffect, append: Append, clock: Clock
) -> None:
    first = make_effect(run.id, idempotency_key=KEY)
    await done(store, append, first, clock)
    second, third = await make_run(), await make_run()
    for later_run in (second, third):
        await done(store, append, make_effect(later_run.id, idempotency_key=KEY), clock)

    group = await store.effect_group(second.id, (await store.list_effects(second.id))[0].call_id)

    assert [(r.run_id, r.from_run_id) for r in group] == [(second.id, run.id), (third.id, run.id)]


async def test_what_is_not_a_reuse_records_nothing(
    store: Store, run: Run, make_run: MakeRun, make_effect: MakeEffect, append: Append, clock: Clock
) -> None:
    first = make_effect(run.id, idempotency_key=KEY)
    await done(store, append, first, clock)
    # the run repeating its own call; another lineage asking other arguments (a conflict);
    # a read under the same key
    again = make_effect(run.id, idempotency_key=KEY)
    other = await make_run()
    conflicting = make_effect(other.id, idempotency_key=KEY, args={"order_id": "4471"})
    read = make_effect(other.id, idempotency_key=KEY, reversibility=Reversibility.READ)

    assert list((await append(run.id, start=[again])).preempted) == [again.call_id]
    assert list((await append(other.id, start=[conflicting])).conflicts) == [conflicting.call_id]
    await append(other.id, start=[read])

    assert await store.effect_group(run.id, first.call_id) == []
    assert await reused_events(store, run.id) == await reused_events(store, other.id) == []


async def test_an_undone_effect_is_relied_on_by_nobody_new(
    store: Store, run: Run, make_run: MakeRun, make_effect: MakeEffect, append: Append, clock: Clock
) -> None:
    first = make_effect(run.id, idempotency_key=KEY, reversibility=Reversibility.REVERSIBLE)
    await done(store, append, first, clock)
    undo = make_effect(
        run.id, tool="reverse_refund", idempotency_key="undo", compensates=first.call_id
    )
    await done(store, append, undo, clock)
    other = await make_run()

    await append(other.id, start=[make_effect(other.id, idempotency_key=KEY)])

    assert await store.effect_group(run.id, first.call_id) == []


async def test_a_compensated_shared_effect_marks_each_run_relying_on_it_once(
    store: Store, run: Run, make_run: MakeRun, make_effect: MakeEffect, append: Append, clock: Any
) -> None:
    first = make_effect(run.id, idempotency_key=KEY)
    await done(store, append, first, clock)
    other = await make_run()
    await done(store, append, make_effect(other.id, idempotency_key=KEY), clock)
    [reuse] = await store.effect_group(run.id, first.call_id)
    mark = AuditEvent(
        action="relied_on_effect_undone",
        actor="U0OPS",
        run_id=other.id,
        at=clock(),
        detail={"call_id": reuse.call_id, "by_run": run.id},
    )
    clock.advance(days=365)  # past the database's own clock, which dates outbox rows
    before = await store.claim_outbox("w0", now=later(), until=later(120), limit=100)
    for item in before:
        await store.finish_outbox(item.id, "w0", at=later())

    assert await store.mark_reuses_undone([(reuse, mark)]) == 1
    assert await store.mark_reuses_undone([(reuse, mark)]) == 0  # once

    [marked] = await store.effect_group(run.id, first.call_id)
    assert marked.undone_at is not None
    events = [e for e in await store.list_events(run_id=other.id) if e.action == mark.action]
    assert [(e.actor, e.detail) for e in events] == [("U0OPS", mark.detail)]
    items = await store.claim_outbox("w1", now=later(), until=later(120), limit=100)
    assert [(i.topic, i.subject_id, i.detail) for i in items] == [
        ("run_noted", other.id, {"action": mark.action, "actor": "U0OPS", **mark.detail})
    ]


def test_a_reuse_is_a_record_of_its_own() -> None:
    assert set(EffectReuse.model_fields) == {
        "run_id",
        "call_id",
        "from_run_id",
        "from_call_id",
        "tool",
        "idempotency_key",
        "at",
        "undone_at",
    }
