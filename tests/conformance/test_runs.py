"""Runs: create, get, list, budgets, retention."""

from __future__ import annotations

import inspect
from datetime import datetime
from datetime import timedelta
from typing import Protocol

import pytest

from store import TERMINAL_STATUSES
from store import AuditEvent
from store import Budget
from store import Checkpoint
from store import EffectOutcome
from store import EffectStatus
from store import Message
from store import Run
from store import RunStatus
from store import Store
from store import Usage
from store import errors

from .builders import Append
from .builders import MakeApproval
from .builders import MakeEffect
from .builders import MakeOneOfEach
from .builders import MakePage
from .builders import MakeRun


class MovableClock(Protocol):
    def __call__(self) -> datetime: ...
    def advance(self, **delta: float) -> datetime: ...


def test_backend_implements_every_store_method(store: Store) -> None:
    assert isinstance(store, Store)
    for name, _ in inspect.getmembers(Store, inspect.isfunction):
        if not name.startswith("_"):
            assert inspect.iscoroutinefunction(getattr(store, name)), name


async def test_create_run_then_get_it_back(store: Store, make_run: MakeRun) -> None:
    run = await make_run(
        "order-4471",
        budget=Budget(max_steps=10, max_cost=1.5),
        requested_by="U123",
        dry_run=True,
    )

    assert await store.get_run("order-4471") == run


async def test_create_run_with_a_taken_id_is_refused_and_changes_nothing(
    store: Store, make_run: MakeRun, clock: MovableClock
) -> None:
    first = await make_run("order-4471", task="Refund order 4471")
    before = await store.history(first.id)
    twin = first.model_copy(update={"task": "Something else", "agent": "other-agent"})
    snapshot = Checkpoint.opening(
        first.id, [Message(role="user", content="Something else")], created_at=clock()
    )

    with pytest.raises(errors.AlreadyExists):
        await store.create_run(twin, snapshot)

    assert await store.get_run(first.id) == first
    assert await store.history(first.id) == before


async def test_get_run_reports_step_usage_and_status_of_latest_checkpoint(
    store: Store, run: Run, append: Append
) -> None:
    usage = Usage(steps=2, input_tokens=300, output_tokens=40, cost=0.0125)
    await append(run.id, step=2, usage=usage, status=RunStatus.WAITING_APPROVAL)

    got = await store.get_run(run.id)

    assert (got.step, got.usage, got.status) == (2, usage, RunStatus.WAITING_APPROVAL)


async def test_list_runs_is_newest_first(
    store: Store, make_run: MakeRun, clock: MovableClock
) -> None:
    made = [await make_run(at=clock() + timedelta(minutes=i)) for i in range(4)]

    listed = await store.list_runs()

    assert [r.id for r in listed] == [r.id for r in reversed(made)]


async def test_list_runs_respects_limit(
    store: Store, make_run: MakeRun, clock: MovableClock
) -> None:
    made = [await make_run(at=clock() + timedelta(minutes=i)) for i in range(5)]

    listed = await store.list_runs(limit=2)

    assert [r.id for r in listed] == [made[4].id, made[3].id]


async def test_list_runs_by_status_follows_the_latest_checkpoint(
    store: Store, make_run: MakeRun, append: Append
) -> None:
    parked, running, done = await make_run(), await make_run(), await make_run()
    await append(parked.id, status=RunStatus.WAITING_APPROVAL)
    await append(done.id, status=RunStatus.DONE)

    waiting = await store.list_runs(RunStatus.WAITING_APPROVAL)
    still_running = await store.list_runs(RunStatus.RUNNING)
    finished = await store.list_runs(RunStatus.DONE)

    assert [r.id for r in waiting] == [parked.id]
    assert [r.id for r in still_running] == [running.id]
    assert [r.id for r in finished] == [done.id]
    assert await store.list_runs(RunStatus.CANCELLED) == []


async def test_set_run_budget_changes_limits_and_keeps_usage(
    store: Store, make_run: MakeRun, append: Append, clock: MovableClock
) -> None:
    run = await make_run(budget=Budget(max_steps=3))
    usage = Usage(steps=3, input_tokens=900, output_tokens=120, cost=0.5)
    await append(run.id, step=3, usage=usage)

    await store.set_run_budget(run.id, Budget(max_steps=10, max_cost=2.0), at=clock())

    got = await store.get_run(run.id)
    assert got.budget == Budget(max_steps=10, max_cost=2.0)
    assert got.usage == usage


async def test_set_budget_of_unknown_run_is_not_found(store: Store, clock: MovableClock) -> None:
    with pytest.raises(errors.NotFound):
        await store.set_run_budget("no-such-run", Budget(max_steps=1), at=clock())


async def test_prune_removes_only_finished_runs_older_than_the_cutoff(
    store: Store, make_run: MakeRun, append: Append, clock: MovableClock
) -> None:
    t0 = clock()
    old = {status: await make_run() for status in TERMINAL_STATUSES}
    for status, run in old.items():
        await append(run.id, status=status)
    old_running = await make_run()
    clock.advance(days=40)
    recent_done = await make_run()
    await append(recent_done.id, status=RunStatus.DONE)

    pruned = await store.prune_runs(t0 + timedelta(days=30))

    assert pruned == 3
    for run in old.values():
        with pytest.raises(errors.NotFound):
            await store.get_run(run.id)
    assert {r.id for r in await store.list_runs()} == {old_running.id, recent_done.id}


@pytest.mark.parametrize("owed", ["open page", "effect in doubt", "effect started"])
async def test_prune_keeps_a_lineage_a_human_still_owes_something(
    store: Store,
    make_run: MakeRun,
    append: Append,
    make_effect: MakeEffect,
    make_page: MakePage,
    clock: MovableClock,
    owed: str,
) -> None:
    parent = await make_run()
    fork = await make_run(lineage_id=parent.lineage_id, parent_id=parent.id)
    if owed == "open page":
        await append(fork.id, pages=[make_page(fork.id)])
    else:
        effect = make_effect(fork.id)
        await append(fork.id, start=[effect])
        if owed == "effect in doubt":
            stuck = EffectOutcome(
                run_id=fork.id,
                call_id=effect.call_id,
                status=EffectStatus.IN_DOUBT,
                error="crashed",
                finished_at=clock(),
            )
            await append(fork.id, finish=[stuck])
    for run in (parent, fork):
        await append(run.id, status=RunStatus.FAILED)

    assert await store.prune_runs(clock() + timedelta(days=365)) == 0
    assert {r.id for r in await store.list_runs()} == {parent.id, fork.id}


async def test_prune_with_nothing_to_prune_returns_zero(
    store: Store, make_run: MakeRun, clock: MovableClock
) -> None:
    await make_run()

    assert await store.prune_runs(clock() + timedelta(days=365)) == 0


async def test_prune_cascades_to_history_effects_approvals_and_pages(
    store: Store,
    run: Run,
    append: Append,
    one_of_each: MakeOneOfEach,
    clock: MovableClock,
) -> None:
    effect, approval, page = one_of_each(run.id)
    event = AuditEvent(action="decide", actor="U1", run_id=run.id, at=clock())
    await append(run.id, start=[effect], request=[approval], pages=[page], events=[event])
    done = EffectOutcome(
        run_id=run.id, call_id=effect.call_id, status=EffectStatus.COMPLETED, finished_at=clock()
    )
    await append(run.id, status=RunStatus.DONE, finish=[done])
    await store.acknowledge_page(page.id, by="U0ONCALL", at=clock())

    assert await store.prune_runs(clock() + timedelta(days=1)) == 1

    with pytest.raises(errors.NotFound):
        await store.history(run.id)
    with pytest.raises(errors.NotFound):
        await store.load_state(run.id)
    with pytest.raises(errors.NotFound):
        await store.get_effect(run.id, effect.call_id)
    with pytest.raises(errors.NotFound):
        await store.get_approval(approval.id)
    with pytest.raises(errors.NotFound):
        await store.get_page(page.id)
    assert await store.list_effects(run.id) == []
    assert await store.list_approvals(run_id=run.id) == []
    assert await store.list_events(run_id=run.id) != []  # the audit trail outlives the run


async def test_a_kept_run_is_fully_loadable_after_prune(
    store: Store,
    make_run: MakeRun,
    append: Append,
    make_effect: MakeEffect,
    make_approval: MakeApproval,
    clock: MovableClock,
) -> None:
    doomed = await make_run()
    await append(doomed.id, status=RunStatus.DONE)
    kept = await make_run(status=RunStatus.RUNNING)
    effect = make_effect(kept.id)
    await append(kept.id, [Message(role="assistant", content="one")], step=1, start=[effect])
    await append(kept.id, [Message(role="user", content="restart")], step=2, snapshot=True)
    await append(kept.id, [Message(role="assistant", content="three")], step=3)
    await store.create_approval(make_approval(kept.id))
    before = await _everything(store, kept.id)

    assert await store.prune_runs(clock() + timedelta(days=1)) == 1

    assert await _everything(store, kept.id) == before


async def _everything(store: Store, run_id: str) -> list[object]:
    history = await store.history(run_id)
    states = [await store.load_state(run_id, seq=cp.seq) for cp in history]
    return [
        await store.get_run(run_id),
        history,
        states,
        await store.list_effects(run_id),
        await store.list_approvals(run_id=run_id),
    ]
