"""The audit trail shows tampering, on both backends: each event carries the previous one's
hash; `audit verify` (here `Queries.audit_chain`) names the first event edited, deleted or
reordered by someone editing the database directly; an anchor catches events deleted from
the end; a prune leaves the rest verifiable; PostgreSQL's own hash of an event (its trigger,
at commit) is the one Python computes, for awkward values too."""

from __future__ import annotations

import sqlite3
from collections.abc import AsyncIterator
from collections.abc import Awaitable
from collections.abc import Callable
from datetime import UTC
from datetime import datetime
from datetime import timedelta
from pathlib import Path
from typing import Any

import pytest
from support.pg_support import HAVE_ASYNCPG

from runtime.queries import Queries
from store import AuditEvent
from store import Store
from store import open_store

AT = datetime(2026, 11, 29, 9, 0, tzinfo=UTC)
Edit = Callable[[str], Awaitable[None]]
"""Run one SQL statement on the database directly, the append-only guard switched off."""


@pytest.fixture(params=["sqlite-file", pytest.param("postgres", marks=pytest.mark.skipif(
    not HAVE_ASYNCPG, reason="asyncpg is not installed"))])  # fmt: skip
async def db(request: pytest.FixtureRequest, tmp_path: Path) -> AsyncIterator[tuple[Store, Edit]]:
    """A store and a way to edit its database behind its back."""
    if request.param == "postgres":
        url = await fresh_chain(request)
        store = await open_store(url)

        async def edit(sql: str) -> None:
            import asyncpg

            base, _, schema = url.partition("?search_path=")
            conn = await asyncpg.connect(base, server_settings={"search_path": schema})
            try:
                async with conn.transaction():
                    await conn.execute(
                        "ALTER TABLE audit_events DISABLE TRIGGER audit_events_append_only"
                    )
                    await conn.execute(sql.replace("{seq}", "commit_seq"))
                    await conn.execute(
                        "ALTER TABLE audit_events ENABLE TRIGGER audit_events_append_only"
                    )
            finally:
                await conn.close()

    else:
        path = tmp_path / "signoff.db"
        store = await open_store(f"sqlite:///{path}")

        async def edit(sql: str) -> None:
            conn = sqlite3.connect(path, isolation_level=None)
            try:
                conn.execute("BEGIN IMMEDIATE")
                conn.execute("DROP TRIGGER IF EXISTS audit_events_append_only")
                conn.execute(sql.replace("{seq}", "id"))
                conn.execute("COMMIT")
            finally:
                conn.close()

    yield store, edit
    await store.close()


async def fresh_chain(request: pytest.FixtureRequest) -> str:
    """The session's PostgreSQL schema, migrated, its audit trail and anchors emptied."""
    from support.pg_support import postgres

    url: str = request.getfixturevalue("postgres_schema")
    await (await open_store(url)).close()
    await postgres("TRUNCATE audit_events, audit_anchors, runs CASCADE", url)
    return url


async def write(store: Store, count: int, **detail: Any) -> list[int]:
    """`count` events about a run no longer stored (what a prune of the audit removes)."""
    for n in range(count):
        event = AuditEvent(
            action="note",
            actor="U0AUD",
            run_id="gone-run",
            detail={"n": n, **detail},
            at=AT + timedelta(seconds=n),
        )
        await store.record_event(event)
    return [e.id for e in await store.list_audit() if e.id is not None]


async def test_an_untouched_trail_verifies(db: tuple[Store, Edit]) -> None:
    store, _ = db
    ids = await write(store, 5)

    report = await Queries(store).audit_chain()

    assert report.intact
    assert report.checked == len(ids) == 5
    events = await store.list_audit()
    assert [e.prev_hash for e in events[1:]] == [e.hash for e in events[:-1]]


async def test_an_edited_event_is_named(db: tuple[Store, Edit]) -> None:
    store, edit = db
    ids = await write(store, 5)

    await edit(f"""UPDATE audit_events SET actor = 'U0EVE' WHERE {{seq}} = {ids[2]}""")

    found = (await Queries(store).audit_chain()).first_break
    assert found is not None
    assert (found.event_id, found.kind) == (ids[2], "edited")


async def test_a_deleted_event_is_named_by_the_one_after_it(db: tuple[Store, Edit]) -> None:
    store, edit = db
    ids = await write(store, 5)

    await edit(f"DELETE FROM audit_events WHERE {{seq}} = {ids[2]}")

    found = (await Queries(store).audit_chain()).first_break
    assert found is not None
    assert (found.event_id, found.kind) == (ids[3], "deleted")
    assert f"after event {ids[1]}" in found.text


async def test_two_swapped_events_are_named(db: tuple[Store, Edit]) -> None:
    store, edit = db
    ids = await write(store, 5)
    a, b = ids[1], ids[2]

    await edit(
        f"UPDATE audit_events SET {{seq}} = CASE {{seq}} WHEN {a} THEN -{b} ELSE -{a} END "
        f"WHERE {{seq}} IN ({a}, {b})"
    )
    await edit("UPDATE audit_events SET {seq} = -{seq} WHERE {seq} < 0")

    found = (await Queries(store).audit_chain()).first_break
    assert found is not None
    assert (found.event_id, found.kind) == (a, "reordered")


async def test_events_deleted_from_the_end_are_caught_by_an_anchor(
    db: tuple[Store, Edit],
) -> None:
    store, edit = db
    ids = await write(store, 4)
    anchor = await store.add_anchor("daily", at=AT)
    assert anchor is not None
    assert anchor.seq == ids[-1]

    await edit(f"DELETE FROM audit_events WHERE {{seq}} >= {ids[2]}")

    found = (await Queries(store).audit_chain()).first_break
    assert found is not None
    assert found.kind == "deleted"
    assert f"names event {ids[-1]}" in found.text


async def test_a_prune_leaves_an_anchor_at_the_cut_and_the_rest_verifies(
    db: tuple[Store, Edit],
) -> None:
    store, _ = db
    await write(store, 3)
    cutoff = datetime.now(UTC) + timedelta(days=1)
    kept = AuditEvent(action="note", actor="U0AUD", detail={}, at=cutoff + timedelta(days=1))
    await store.record_event(kept)

    _, pruned = await store.prune(cutoff, include_audit=True)

    assert pruned == 3
    queries = Queries(store)
    report = await queries.audit_chain()
    assert report.intact
    assert report.checked == 1
    [cut] = [a for a in await store.list_anchors() if a.kind == "cut"]
    [left] = await store.list_audit()
    assert left.prev_hash == cut.hash


AWKWARD: list[Any] = [
    {"text": 'quote " backslash \\ tab \t newline \n bell \x07 del \x7f'},
    {"nul": "a\x00b", "esc": "\uffff", "emoji": "🙂", "accents": "Zürich"},
    {"floats": [0.1, 2.5, 1e-07, 1.5e-10, 2.8e16, 1e22, 100.0, -0.0, -3.25]},
    {"ints": [0, -1, 2**53 + 1, 10**30], "bools": [True, False, None]},
    {"b": 1, "aa": 2, "a": 3, "ä": 4, "ab": {"z": [], "y": {}}},
    {"\x00key": 1, "k\uffff": 2},
]


@pytest.mark.skipif(not HAVE_ASYNCPG, reason="asyncpg is not installed")
async def test_postgres_hashes_awkward_values_as_python_does(
    request: pytest.FixtureRequest,
) -> None:
    url = await fresh_chain(request)
    async with open_store(url) as store:
        for detail in AWKWARD:
            event = AuditEvent(action="note", actor="U\x00\uffff", detail=detail, at=AT)
            await store.record_event(event)
        report = await Queries(store).audit_chain()
    assert report.intact, report.first_break
    assert report.checked == len(AWKWARD)
