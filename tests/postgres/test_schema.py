"""Opening a PostgreSQL schema: migrated once, a newer one refused untouched, a foreign one
refused."""

from __future__ import annotations

import pytest
from support.pg_support import POSTGRES_URL
from support.pg_support import postgres
from support.pg_support import with_search_path

from store import errors
from store import migration
from store import open_store

asyncpg = pytest.importorskip("asyncpg")


async def test_a_schema_written_by_a_newer_signoff_is_refused_untouched(pg_url: str) -> None:
    async with open_store(pg_url):
        pass
    newer = migration.latest_version("postgres") + 1
    await postgres(f"INSERT INTO signoff_schema VALUES ({newer}, 'from_the_future', now())", pg_url)

    with pytest.raises(errors.SchemaTooNew) as refused:
        await open_store(pg_url)

    assert refused.value.details == {"found": newer, "supported": newer - 1}
    conn = await asyncpg.connect(pg_url)
    try:
        versions = await conn.fetchval(
            "SELECT array_agg(version ORDER BY version) FROM signoff_schema"
        )
    finally:
        await conn.close()
    assert versions == list(range(1, newer + 1))


async def test_a_schema_holding_another_applications_tables_is_refused(pg_url: str) -> None:
    await postgres("CREATE TABLE invoices (id int)", pg_url)

    with pytest.raises(errors.ForeignDatabase):
        await open_store(pg_url)

    with pytest.raises(errors.ForeignDatabase):
        await open_store(pg_url, migrate=False)


async def test_an_unreachable_server_is_one_clear_error() -> None:
    with pytest.raises(errors.DatabaseError, match="postgresql"):
        await open_store("postgresql://postgres@127.0.0.1:1/none")


async def test_the_pool_size_may_ride_in_the_url_and_never_reaches_the_server(
    pg_url: str,
) -> None:
    async with open_store(f"{pg_url}&pool_size=2") as store:  # the server would refuse it
        assert await store.schema_version() == migration.latest_version("postgres")


async def test_a_search_path_naming_no_schema_is_refused_saying_how_to_fix_it() -> None:
    url = with_search_path(POSTGRES_URL, "signoff_no_such_schema")
    with pytest.raises(errors.UnsupportedURL, match="CREATE SCHEMA"):
        await open_store(url)
