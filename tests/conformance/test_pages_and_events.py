"""Pages (effects a human must handle) and the audit trail."""

from __future__ import annotations

from datetime import timedelta
from itertools import pairwise

import pytest

from store import AuditEvent
from store import Batch
from store import Delivery
from store import Page
from store import Run
from store import Store
from store import errors

from .builders import Clock
from .builders import MakePage
from .builders import MakeRun


async def page_of(store: Store, run: Run, page: Page) -> Page:
    await store.commit(Batch(run_id=run.id, pages=[page]))
    return page


# pages


async def test_a_page_committed_in_a_batch_can_be_read_back(
    store: Store, run: Run, make_page: MakePage
) -> None:
    page = make_page(run.id, call_id="call_7", reason="in doubt", channel=None)

    await store.commit(Batch(run_id=run.id, pages=[page]))

    assert await store.get_page(page.id) == page


async def test_the_same_page_twice_is_stored_once(
    store: Store, run: Run, make_page: MakePage
) -> None:
    page = make_page(run.id, id="page-run-1-call_7")
    twin = page.model_copy(update={"detail": "a retry of the same page"})

    await store.commit(Batch(run_id=run.id, pages=[page, twin]))
    await store.commit(Batch(run_id=run.id, pages=[twin]))

    assert await store.list_pages() == [page]


async def test_a_pages_message_learnt_from_a_click_is_kept_only_where_none_is(
    store: Store, run: Run, make_page: MakePage
) -> None:
    page = await page_of(store, run, make_page(run.id, channel=None))

    assert await store.adopt_message("page", page.id, channel="C9", ts="3.25")
    assert not await store.adopt_message("page", page.id, channel="C9", ts="4.25")

    got = await store.get_page(page.id)
    assert (got.channel, got.message_ts, got.delivery) == ("C9", "3.25", Delivery.DELIVERED)


async def test_list_pages_open_only_hides_acknowledged_ones(
    store: Store, run: Run, make_page: MakePage, clock: Clock
) -> None:
    pages = [
        await page_of(store, run, make_page(run.id, created_at=clock() + timedelta(seconds=i)))
        for i in range(3)
    ]
    await store.acknowledge_page(pages[1].id, by="U1", at=clock())

    assert [p.id for p in await store.list_pages()] == [pages[0].id, pages[2].id]
    assert [p.id for p in await store.list_pages(open_only=False)] == [p.id for p in pages]


async def test_list_pages_of_one_run(
    store: Store, make_run: MakeRun, make_page: MakePage, clock: Clock
) -> None:
    first, second = await make_run(), await make_run()
    pages = [
        await page_of(store, run, make_page(run.id, created_at=clock() + timedelta(seconds=i)))
        for i, run in enumerate([first, second, first])
    ]
    await store.acknowledge_page(pages[2].id, by="U1", at=clock())

    assert [p.id for p in await store.list_pages(run_id=first.id)] == [pages[0].id]
    assert [p.id for p in await store.list_pages(run_id=first.id, open_only=False)] == [
        pages[0].id,
        pages[2].id,
    ]
    assert [p.id for p in await store.list_pages(run_id=second.id)] == [pages[1].id]
    assert await store.list_pages(run_id="no-such-run") == []


async def test_a_page_is_acknowledged_once(
    store: Store, run: Run, make_page: MakePage, clock: Clock
) -> None:
    page = await page_of(store, run, make_page(run.id))
    acked = await store.acknowledge_page(page.id, by="U1", at=clock())

    with pytest.raises(errors.Conflict):
        await store.acknowledge_page(page.id, by="U2", at=clock() + timedelta(minutes=1))

    assert (acked.acknowledged_by, acked.acknowledged_at) == ("U1", clock())
    assert await store.get_page(page.id) == acked


async def test_set_page_message_records_where_it_was_posted(
    store: Store, run: Run, make_page: MakePage
) -> None:
    page = await page_of(store, run, make_page(run.id))

    await store.set_page_message(page.id, channel="C-oncall", ts="1700.5", delivery="delivered")

    got = await store.get_page(page.id)
    assert (got.channel, got.message_ts, got.delivery) == ("C-oncall", "1700.5", Delivery.DELIVERED)


async def test_an_unknown_page_delivery_status_is_refused_and_changes_nothing(
    store: Store, run: Run, make_page: MakePage
) -> None:
    page = await page_of(store, run, make_page(run.id))

    with pytest.raises(ValueError, match="posted"):
        await store.set_page_message(page.id, channel="C1", ts="1.0", delivery="posted")

    assert await store.list_pages() == [page]


# audit events


async def test_recorded_events_are_listed_in_order_with_ids(
    store: Store, run: Run, clock: Clock
) -> None:
    events = [
        AuditEvent(action="fork", actor="U1", run_id=run.id, detail={"from_step": 3}, at=clock()),
        AuditEvent(action="page.ack", actor="U2", approval_id=None, at=clock()),
        AuditEvent(action="cancel", actor="U3", run_id=run.id, detail={"ü": ["ß"]}, at=clock()),
    ]
    for event in events:
        await store.record_event(event)

    listed = await store.list_events()

    unnumbered = {"id": None, "prev_hash": None, "hash": None}
    assert [e.model_copy(update=unnumbered) for e in listed] == events
    assert [e.prev_hash for e in listed[1:]] == [e.hash for e in listed[:-1]]  # chained
    ids = [e.id for e in listed]
    assert all(a is not None and b is not None and a < b for a, b in pairwise(ids)), ids


async def test_list_events_of_one_run(store: Store, run: Run, clock: Clock) -> None:
    await store.record_event(AuditEvent(action="resume", actor="W1", run_id=run.id, at=clock()))
    await store.record_event(AuditEvent(action="resume", actor="W1", run_id="other", at=clock()))

    assert [e.run_id for e in await store.list_events(run_id=run.id)] == [run.id]


async def test_events_committed_in_a_batch_are_recorded(
    store: Store, run: Run, clock: Clock
) -> None:
    events = [AuditEvent(action=f"a{i}", actor="W1", run_id=run.id, at=clock()) for i in range(2)]

    await store.commit(Batch(run_id=run.id, events=events))

    assert [e.action for e in await store.list_events(run_id=run.id)] == ["a0", "a1"]


async def test_open_pages_for_one_person_are_those_about_their_runs_at_most_a_limit(
    store: Store, make_run: MakeRun, make_page: MakePage, clock: Clock
) -> None:
    eves, bobs = await make_run(requested_by="U0EVE"), await make_run(requested_by="U0BOB")
    pages = [
        await page_of(store, run, make_page(run.id, created_at=clock() + timedelta(seconds=i)))
        for i, run in enumerate([eves, bobs, eves, eves])
    ]
    await store.acknowledge_page(pages[3].id, by="U1", at=clock())

    assert [p.id for p in await store.open_pages_for("U0EVE", limit=10)] == [
        pages[0].id,
        pages[2].id,
    ]
    assert [p.id for p in await store.open_pages_for("U0EVE", limit=1)] == [pages[0].id]
    assert [p.id for p in await store.open_pages_for(None, limit=10)] == [p.id for p in pages[:3]]
    assert await store.open_pages_for("U0NOBODY", limit=10) == []
