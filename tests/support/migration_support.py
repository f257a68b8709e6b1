"""For the tests of one migration on both backends: a statement run on the database itself, as
another program would, and a store opened one migration short of the one under test."""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any

import pytest

from store import Store
from store import migration
from store import open_store


def is_sqlite(url: str) -> bool:
    return url.startswith("sqlite")


def dialect_of(url: str) -> str:
    return "sqlite" if is_sqlite(url) else "postgres"


async def execute(url: str, statement: str, *args: Any) -> list[tuple[Any, ...]]:
    """A statement on the database itself (`?` placeholders), as another program runs it."""
    if is_sqlite(url):
        import sqlite3

        with sqlite3.connect(url.removeprefix("sqlite:///")) as conn:
            found = conn.execute(statement, args).fetchall()
        conn.close()
        return found
    import asyncpg

    parts = statement.split("?")
    numbered = parts[0] + "".join(f"${i}{part}" for i, part in enumerate(parts[1:], 1))
    conn = await asyncpg.connect(url)  # its search_path names the test's schema
    try:
        return [tuple(row) for row in await conn.fetch(numbered, *args)]
    finally:
        await conn.close()


@asynccontextmanager
async def store_before(
    url: str, name: str, monkeypatch: pytest.MonkeyPatch
) -> AsyncIterator[Store]:
    """The store at `url` migrated up to, not including, the migration `name`."""
    every = migration.migrations
    version = next(m.version for m in every(dialect_of(url)) if m.name == name)
    with monkeypatch.context() as before:
        before.setattr(migration, "migrations", lambda d: every(d)[: version - 1])
        async with open_store(url) as store:
            assert await store.schema_version() == version - 1
            yield store
