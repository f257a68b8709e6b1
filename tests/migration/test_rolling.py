"""Migrating beside workers that still run: each migration says whether older workers may run
on beside it; an unsafe one is refused while an older worker holds a lease (naming it, and
changing nothing), unless told to stop the world, which takes those leases; a worker that
cannot step aside (a Signoff from before leases said their schema) holds up every migration;
and a worker of the schema before a safe migration reads the rows it left, claims nothing
more, and is told why."""

from __future__ import annotations

from collections.abc import AsyncIterator
from datetime import UTC
from datetime import datetime
from datetime import timedelta
from pathlib import Path

import pytest
from support.future_schema import known_with_future
from support.pg_support import database_url
from support.pg_support import postgres

from store import Approval
from store import Batch
from store import Checkpoint
from store import Run
from store import Store
from store import errors
from store import migration
from store import open_store

OLD = "worker-old"
LATER = {
    "sqlite": "(julianday('now') - 2440587.5) * 86400.0 + 300",
    "postgres": "now() + interval '5 minutes'",
}
"""Five minutes from now, as each dialect stores a lease's end."""


@pytest.fixture(params=["sqlite", "postgres"])
async def url(request: pytest.FixtureRequest, tmp_path: Path) -> AsyncIterator[str]:
    async for url in database_url(request.param, tmp_path, "signoff_rolling"):
        yield url


def dialect(url: str) -> str:
    return "sqlite" if url.startswith("sqlite") else "postgres"


async def sql(url: str, statement: str) -> None:
    """One statement on the database itself, as another program would run it."""
    if dialect(url) == "postgres":
        await postgres(statement, url)
        return
    import sqlite3

    with sqlite3.connect(url.removeprefix("sqlite:///")) as conn:
        conn.execute(statement)
    conn.close()


async def leased_run(store: Store, run_id: str, owner: str = OLD) -> int:
    """A new run whose lease `owner` holds (taken by this Signoff); the lease's epoch."""
    now = datetime.now(UTC)
    run = Run(id=run_id, agent="a", task="t", lineage_id=run_id)
    await store.create_run(run, Checkpoint.opening(run_id, []))
    epoch = await store.acquire_lease(run_id, owner, until=now + timedelta(minutes=5), now=now)
    assert epoch is not None
    return epoch


@pytest.fixture
def future(monkeypatch: pytest.MonkeyPatch) -> pytest.MonkeyPatch:
    """Patch `migration.migrations` with `future.setattr(...)`; undone after the test."""
    return monkeypatch


def test_every_migration_says_whether_older_workers_may_run_beside_it() -> None:
    safety = {
        d: [(m.version, m.safe) for m in migration.migrations(d)] for d in ("sqlite", "postgres")
    }

    assert safety["sqlite"] == safety["postgres"]
    assert all(m.why for d in safety for m in migration.migrations(d))


def test_a_migration_that_does_not_say_is_refused() -> None:
    with pytest.raises(ValueError, match="0042_silent must say on its first line"):
        migration.parse(42, "silent", "-- Adds a column.\nALTER TABLE runs ADD COLUMN x text;")


async def test_an_unsafe_migration_is_refused_while_an_older_worker_holds_a_lease(
    url: str, future: pytest.MonkeyPatch
) -> None:
    async with open_store(url) as older:
        await leased_run(older, "r1")
        known = older.known_schema
        future.setattr(migration, "migrations", known_with_future(safe=False))
        async with open_store(url, migrate=False) as newer:
            with pytest.raises(errors.UnsafeMigration) as refused:
                await newer.migrate()

            assert f"{OLD} (schema {known}, 1 run)" in str(refused.value)
            assert refused.value.details["workers"] == [f"{OLD} (schema {known}, 1 run)"]
            assert await newer.schema_version() == known  # nothing changed
            assert (await older.get_run("r1")).lease_owner == OLD


async def test_stopping_the_world_takes_the_older_workers_leases(
    url: str, future: pytest.MonkeyPatch
) -> None:
    async with open_store(url) as older:
        epoch = await leased_run(older, "r1")
        known = older.known_schema
        future.setattr(migration, "migrations", known_with_future(safe=False))
        async with open_store(url, migrate=False) as newer:
            assert await newer.migrate(stop_the_world=True) == (known, known + 1)

            assert (await newer.get_run("r1")).lease_owner is None
            assert (await newer.ready_runs())[0] == 1  # back in the queue for another worker
        later = datetime.now(UTC) + timedelta(minutes=5)
        assert not await older.renew_lease("r1", OLD, until=later, epoch=epoch)
        with pytest.raises(errors.LeaseLost):
            await older.commit(Batch(run_id="r1", owner=OLD, epoch=epoch, checkpoints=[]))


async def test_a_safe_migration_goes_on_and_the_older_worker_claims_nothing_more(
    url: str, future: pytest.MonkeyPatch
) -> None:
    async with open_store(url) as older:
        await leased_run(older, "r1")
        await sql(url, "UPDATE runs SET lease_owner = NULL, ready_at = created_at")
        await leased_run(older, "r2")  # held on: a safe migration goes on beside it
        await older.create_approval(Approval(id="a1", tool="refund", args={"order": 1}))
        known = older.known_schema
        future.setattr(migration, "migrations", known_with_future(safe=True))
        async with open_store(url) as newer:
            assert await newer.schema_version() == known + 1
        now = datetime.now(UTC)

        # what it reads still reads, columns it does not know left out
        assert (await older.get_approval("a1")).args == {"order": 1}
        assert (await older.get_run("r1")).id == "r1"
        with pytest.raises(errors.SchemaTooNew) as claim:
            await older.claim_runs(OLD, limit=5, until=now + timedelta(seconds=30), now=now)
        with pytest.raises(errors.SchemaTooNew):
            await older.claim_outbox(OLD, now=now, until=now + timedelta(seconds=30))

        assert claim.value.details == {"found": known + 1, "supported": known}
        assert (await older.ready_runs())[0] == 1  # left for a worker that knows the schema
        assert (await older.outbox_backlog())[0] == 1


async def test_a_worker_that_cannot_step_aside_holds_up_every_migration(
    url: str, future: pytest.MonkeyPatch
) -> None:
    """A lease taken by a Signoff from before leases said their schema: on a database that
    has no such column yet (the release before this one), and one whose lease moved on to
    such a worker after this Signoff held it (its epoch moved, its schema did not)."""
    async with open_store(url) as store:
        await leased_run(store, "mine", owner="worker-new")
        await leased_run(store, "taken")
        await sql(url, "UPDATE runs SET lease_owner = 'ancient', lease_epoch = lease_epoch + 1 "
                       "WHERE id = 'taken'")  # fmt: skip
        future.setattr(migration, "migrations", known_with_future(safe=True))

        with pytest.raises(errors.UnsafeMigration) as refused:
            await store.migrate()

    assert refused.value.details["workers"] == [
        "ancient (1 run; a Signoff that cannot step aside: stop it)"
    ]


async def test_a_database_from_before_leases_said_their_schema_lists_every_holder(
    url: str, future: pytest.MonkeyPatch
) -> None:
    known = migration.migrations
    said = next(m.version for m in known(dialect(url)) if m.name == "lease_schema")
    with future.context() as before:
        before.setattr(migration, "migrations", lambda d: known(d)[: said - 1])
        async with open_store(url) as store:
            run = Run(id="r1", agent="a", task="t", lineage_id="r1")
            await store.create_run(run, Checkpoint.opening("r1", []))
    later = LATER[dialect(url)]
    await sql(url, f"UPDATE runs SET lease_owner = 'older', lease_expires_at = {later}")

    async with open_store(url, migrate=False) as store:
        with pytest.raises(errors.UnsafeMigration, match=r"older \(1 run; a Signoff that cannot"):
            await store.migrate()
        assert await store.schema_version() == said - 1
