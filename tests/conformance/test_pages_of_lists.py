"""Listing approvals and runs a page at a time: every filter, and a position (created_at, id)
that pages through records made in the same instant without skipping or repeating one."""

from __future__ import annotations

from datetime import timedelta

from store import ApprovalState
from store import Run
from store import RunStatus
from store import Store
from store.base import Ruling

from .builders import Clock
from .builders import MakeApproval
from .builders import MakeRun


async def test_page_approvals_filters_and_pages_oldest_first(
    store: Store, run: Run, make_approval: MakeApproval, clock: Clock
) -> None:
    same_instant = clock()
    made = [
        make_approval(run.id, id="a1", created_at=same_instant, requested_by="alice"),
        make_approval(run.id, id="a2", created_at=same_instant, tool="wire"),
        make_approval(None, id="a3", created_at=same_instant + timedelta(seconds=1)),
        make_approval(None, id="a4", created_at=same_instant + timedelta(seconds=2)),
    ]
    for approval in reversed(made):
        await store.create_approval(approval)
    await store.decide_approval("a4", Ruling(ApprovalState.DECLINED, by="U1", at=clock()))

    first = await store.page_approvals(limit=2)
    assert [a.id for a in first] == ["a1", "a2"]
    after = (first[-1].created_at, first[-1].id)
    assert [a.id for a in await store.page_approvals(after=after, limit=2)] == ["a3", "a4"]
    one = (first[0].created_at, first[0].id)
    assert [a.id for a in await store.page_approvals(after=one, limit=1)] == ["a2"]
    pending = await store.page_approvals(state=ApprovalState.PENDING)
    assert [a.id for a in pending] == ["a1", "a2", "a3"]
    assert [a.id for a in await store.page_approvals(run_id=run.id)] == ["a1", "a2"]
    assert [a.id for a in await store.page_approvals(tool="wire")] == ["a2"]
    assert [a.id for a in await store.page_approvals(requested_by="alice")] == ["a1"]
    assert await store.page_approvals(tool="wire", requested_by="alice") == []


async def test_page_runs_filters_and_pages_newest_first(
    store: Store, make_run: MakeRun, clock: Clock
) -> None:
    at = clock()
    await make_run("r1", at=at, requested_by="alice")
    await make_run("r2", at=at + timedelta(seconds=1), requested_by="bob")
    await make_run("r3", at=at + timedelta(seconds=1))

    first = await store.page_runs(limit=2)
    assert [r.id for r in first] == ["r2", "r3"]
    after = (first[-1].created_at, first[-1].id)
    assert [r.id for r in await store.page_runs(after=after)] == ["r1"]
    assert [r.id for r in await store.page_runs(status=RunStatus.RUNNING)] == ["r2", "r3", "r1"]
    assert await store.page_runs(status=RunStatus.DONE) == []
    assert [r.id for r in await store.page_runs(agent="refund-agent", limit=1)] == ["r2"]
    assert await store.page_runs(agent="nobody") == []
    assert [r.id for r in await store.page_runs(requested_by="alice")] == ["r1"]
    assert first[0].step == 0  # joined to the latest checkpoint
