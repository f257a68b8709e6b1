"""A run's current timeline: after a rollback (a snapshot at a lower step), the steps it went
back before are not served by step, and stay in the history marked `rolled_back`. Also: a run
is created with its first checkpoint and its first events in one transaction."""

from __future__ import annotations

import pytest

from store import AuditEvent
from store import Checkpoint
from store import Message
from store import Run
from store import RunStatus
from store import Store
from store import errors

from .builders import Append
from .builders import Clock
from .builders import MakeRun
from .builders import text


async def rolled_back_run(make_run: MakeRun, append: Append) -> Run:
    """Steps 1-3 (a, b, c), a rollback to step 1, then a new step 2 (d)."""
    run = await make_run(messages=[text("task", "user")])
    for step, word in enumerate("abc", start=1):
        await append(run.id, [text(word)], step=step)
    restore = [text("task", "user"), text("a")]
    await append(run.id, restore, step=1, snapshot=True, status=RunStatus.FAILED)
    await append(run.id, [text("d")], step=2)
    return run


async def test_a_step_a_rollback_went_back_before_is_not_served(
    store: Store, make_run: MakeRun, append: Append
) -> None:
    run = await rolled_back_run(make_run, append)

    with pytest.raises(errors.NotFound):
        await store.load_state(run.id, step=3)
    assert [m.content for m in (await store.load_state(run.id, step=2)).messages] == [
        "task",
        "a",
        "d",
    ]
    at_one = await store.load_state(run.id, step=1)
    assert (at_one.seq, at_one.status) == (4, RunStatus.FAILED)
    assert (await store.load_state(run.id, step=0)).seq == 0
    assert [m.content for m in (await store.load_state(run.id, seq=3)).messages] == [
        "task",
        "a",
        "b",
        "c",
    ]


async def test_history_marks_what_a_rollback_went_back_before(
    store: Store, make_run: MakeRun, append: Append
) -> None:
    run = await rolled_back_run(make_run, append)

    history = await store.history(run.id)

    assert [(c.seq, c.step, c.rolled_back) for c in history] == [
        (0, 0, False),
        (1, 1, False),
        (2, 2, True),
        (3, 3, True),
        (4, 1, False),
        (5, 2, False),
    ]


async def test_a_rollback_to_the_current_step_marks_nothing(
    store: Store, make_run: MakeRun, append: Append
) -> None:
    run = await make_run(messages=[text("task", "user")])
    await append(run.id, [text("a")], step=1)
    await append(run.id, [text("task", "user"), text("a")], step=1, snapshot=True)

    assert [c.rolled_back for c in await store.history(run.id)] == [False, False, False]
    assert (await store.load_state(run.id, step=1)).seq == 2


def new_run(run_id: str, clock: Clock) -> tuple[Run, Checkpoint]:
    run = Run(id=run_id, agent="refund-agent", task="Refund 4471", lineage_id=run_id)
    first = Checkpoint.opening(
        run_id, [Message(role="user", content="Refund 4471")], created_at=clock()
    )
    return run, first


async def test_a_run_is_created_with_its_events(store: Store, clock: Clock) -> None:
    run, first = new_run("fork-1", clock)
    event = AuditEvent(action="fork", actor="U1", run_id="fork-1", detail={"parent": "run-0"})

    await store.create_run(run, first, events=[event])

    (recorded,) = await store.list_events(run_id="fork-1")
    assert (recorded.action, recorded.detail) == ("fork", {"parent": "run-0"})
    assert (await store.load_state("fork-1")).seq == 0


async def test_a_run_that_exists_already_records_no_events(store: Store, clock: Clock) -> None:
    run, first = new_run("fork-1", clock)
    await store.create_run(run, first)
    event = AuditEvent(action="fork", actor="U1", run_id="fork-1")

    with pytest.raises(errors.AlreadyExists):
        await store.create_run(run, first, events=[event])

    assert await store.list_events(run_id="fork-1") == []


async def test_a_new_run_with_events_of_another_run_is_refused(store: Store, clock: Clock) -> None:
    run, first = new_run("fork-1", clock)
    stranger = AuditEvent(action="fork", actor="U1", run_id="run-0")

    with pytest.raises(errors.InvalidRecord):
        await store.create_run(run, first, events=[stranger])

    assert await store.list_runs() == []
    assert await store.list_events() == []
