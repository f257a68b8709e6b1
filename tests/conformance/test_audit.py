"""The audit trail in the store: every approval's creation is recorded with it (requested,
auto-approved or denied) with sensitive arguments masked, events are never updated, the
export pages by time and id, and pruning removes the trail only when asked."""

from __future__ import annotations

import asyncio
from datetime import timedelta

import pytest

from store import ApprovalState
from store import AuditEvent
from store import Batch
from store import EffectOutcome
from store import EffectStatus
from store import Run
from store import Store

from .builders import Append
from .builders import Clock
from .builders import MakeApproval
from .builders import MakeEffect
from .builders import MakeRun


@pytest.mark.parametrize(
    ("state", "action"),
    [
        (ApprovalState.PENDING, "approval_requested"),
        (ApprovalState.APPROVED, "approval_auto_approved"),
        (ApprovalState.DECLINED, "approval_denied"),
    ],
)
async def test_an_approval_is_recorded_with_its_creation_masked(
    store: Store, run: Run, make_approval: MakeApproval, state: ApprovalState, action: str
) -> None:
    approval = make_approval(
        run.id,
        state=state,
        requested_by="U0REQ",
        args={"order_id": "4471", "card": "4111111111111111", "flags": [True, None]},
        sensitive=("card",),
    )
    await store.create_approval(approval)

    [event] = await store.list_events(run_id=run.id)
    # a request is the requester's; an approval decided at its creation (by a rule) is the
    # decider's, which is Signoff itself when the approval does not say
    actor = "U0REQ" if state == ApprovalState.PENDING else (approval.decided_by or "signoff")
    assert (event.action, event.actor, event.approval_id, event.at) == (
        action,
        actor,
        approval.id,
        approval.created_at,
    )
    assert event.detail["args"] == {
        "order_id": "4471",
        "card": "[sensitive]",
        "flags": [True, None],
    }
    assert (event.detail["tool"], event.detail["policy"]) == ("issue_refund", "default")
    assert (await store.get_approval(approval.id)).args["card"] == "4111111111111111"


async def test_the_trail_pages_by_time_and_id_and_filters(
    store: Store, make_run: MakeRun, clock: Clock
) -> None:
    first, second = await make_run(), await make_run()
    for n in range(5):
        run = first if n % 2 == 0 else second
        event = AuditEvent(action=f"step{n}", actor="U0", run_id=run.id, at=clock.advance(hours=1))
        await store.record_event(event)
    every = await store.list_audit()
    assert [e.action for e in every] == [f"step{n}" for n in range(5)]
    assert [e.action for e in await store.list_audit(since=every[2].at)] == [
        "step2",
        "step3",
        "step4",
    ]
    page = await store.list_audit(after=every[1].id or 0, limit=2)
    assert [e.action for e in page] == ["step2", "step3"]
    assert [e.action for e in await store.list_audit(run_id=second.id)] == ["step1", "step3"]


async def test_pruning_keeps_the_trail_unless_asked(
    store: Store, make_run: MakeRun, clock: Clock
) -> None:
    old = await make_run(status="done")
    await store.record_event(AuditEvent(action="cancel", actor="U0", run_id=old.id, at=clock()))
    kept = await make_run(status="running")
    await store.record_event(AuditEvent(action="resume", actor="U0", run_id=kept.id, at=clock()))
    clock.advance(days=40)
    cutoff = clock() - timedelta(days=30)

    assert await store.prune(cutoff, include_audit=False) == (1, 0)
    assert [e.action for e in await store.list_audit()] == ["cancel", "resume"]
    assert await store.prune(cutoff, include_audit=True) == (0, 1)
    assert [e.action for e in await store.list_audit()] == ["resume"]  # its run still exists


@pytest.mark.parametrize(
    ("sensitive", "shown"),
    [
        ((), {"order_id": "4471", "card": "4111111111111111", "flags": [True, None]}),
        (("card",), {"order_id": "4471", "card": "[sensitive]", "flags": [True, None]}),
    ],
)
async def test_an_effect_that_ended_is_recorded_with_its_arguments_masked(
    store: Store,
    run: Run,
    append: Append,
    make_effect: MakeEffect,
    clock: Clock,
    sensitive: tuple[str, ...],
    shown: dict[str, object],
) -> None:
    args = {"order_id": "4471", "card": "4111111111111111", "flags": [True, None]}
    effect = make_effect(run.id, args=args, sensitive=sensitive)
    await append(run.id, start=[effect])
    done = EffectOutcome(
        run_id=run.id,
        call_id=effect.call_id,
        status=EffectStatus.COMPLETED,
        result={"refund_id": "re_1"},
        finished_at=clock(),
    )
    await store.commit(Batch(run_id=run.id, finish=[done]))

    [event] = [e for e in await store.list_events(run_id=run.id) if e.action != "step"]
    assert event.action == "effect_completed"
    assert event.detail["args"] == shown
    assert event.detail["call_id"] == effect.call_id


async def test_a_reader_paging_while_writers_commit_misses_no_event(
    store: Store, make_run: MakeRun, clock: Clock
) -> None:
    """Twenty writers at once, a reader paging by `after` throughout: every event it pages
    past is one it listed (ids in commit order leave no gap behind the last one read)."""
    runs = [await make_run() for _ in range(4)]
    writes = [
        AuditEvent(action=f"w{n}", actor="U0", run_id=runs[n % 4].id, at=clock()) for n in range(20)
    ]
    seen: list[str] = []
    after = 0

    async def page() -> None:
        nonlocal after
        for event in await store.list_audit(after=after):
            seen.append(event.action)
            after = event.id or after

    async def read_until(done: asyncio.Future[object]) -> None:
        while not done.done():
            await page()
            await asyncio.sleep(0)
        await page()

    writers = asyncio.gather(*(store.record_event(event) for event in writes))
    await asyncio.gather(writers, read_until(writers))

    assert sorted(seen) == sorted(e.action for e in writes)  # none skipped, none twice
    assert [e.action for e in await store.list_audit()] == seen
