"""The checked-in `docs/schema/postgres.md` shows the schema a fresh PostgreSQL schema has
after every migration."""

from __future__ import annotations

import re

import pytest
from support.migration_support import store_before

from store import migration
from store import open_store
from store import schema
from store.schema.compare import difference

asyncpg = pytest.importorskip("asyncpg")


async def test_a_freshly_migrated_schema_has_the_checked_in_schema(pg_url: str) -> None:
    async with open_store(pg_url):
        pass
    conn = await asyncpg.connect(pg_url)
    try:
        fresh = await schema.postgres_schema_of(conn)
    finally:
        await conn.close()

    problem = difference("postgres", fresh)

    assert problem is None, problem
    assert "signoff_test_" not in fresh  # the schema's own name is left out


def start_step_types_before_0030() -> str:
    """The argument types of `signoff_start_step` as migrations 0019 and 0029 left it (text
    digests), read from the statement by which 0030 drops that form."""
    sql = next(m.sql for m in migration.migrations("postgres") if m.name == "compact_digests")
    found = re.search(r"DROP FUNCTION (?:IF EXISTS )?signoff_start_step\((.*?)\);", sql, re.S)
    assert found is not None, "0030 no longer drops the form older migrations left"
    return found[1]


async def test_a_database_an_older_signoff_took_to_0029_upgrades_to_the_checked_in_schema(
    pg_url: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """0030 holds the one body of `signoff_start_step`; a database an older Signoff migrated
    past 0019 has the older form, which 0030 drops."""
    async with store_before(pg_url, "compact_digests", monkeypatch):
        pass
    conn = await asyncpg.connect(pg_url)
    try:
        await conn.execute(
            f"CREATE FUNCTION signoff_start_step({start_step_types_before_0030()}) "
            "RETURNS jsonb LANGUAGE sql AS 'SELECT NULL::jsonb'"
        )
        async with open_store(pg_url):
            pass
        problem = difference("postgres", await schema.postgres_schema_of(conn))
    finally:
        await conn.close()

    assert problem is None, problem


async def test_a_schema_change_fails_with_a_diff_and_the_command_that_regenerates(
    pg_url: str,
) -> None:
    async with open_store(pg_url):
        pass
    conn = await asyncpg.connect(pg_url)
    try:
        await conn.execute("CREATE INDEX runs_by_task ON runs (task)")
        problem = difference("postgres", await schema.postgres_schema_of(conn))
    finally:
        await conn.close()

    assert problem is not None
    assert "python -m store.schema postgres --write" in problem
    assert "+CREATE INDEX runs_by_task ON runs USING btree (task);" in problem.splitlines()
