"""The checked-in `store/schema/postgres.sql` is the schema a fresh PostgreSQL schema has
after every migration."""

from __future__ import annotations

import pytest

from store import open_store, schema
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
