"""Where the PostgreSQL tests find their server, and the statements that set up their schemas."""

from __future__ import annotations

import asyncio
import importlib.util
import os
import secrets
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path

from store import open_store

HAVE_ASYNCPG = importlib.util.find_spec("asyncpg") is not None
POSTGRES_URL = os.environ.get(
    "SIGNOFF_TEST_POSTGRES_URL", "postgresql://postgres@127.0.0.1:5432/test"
)


def with_search_path(url: str, schema: str) -> str:
    return f"{url}{'&' if '?' in url else '?'}search_path={schema}"


def migrate(url: str) -> None:
    """Apply every migration to the database `url` names, from a test that runs no loop."""

    async def opened() -> None:
        async with open_store(url):
            pass

    asyncio.run(opened())


async def postgres(statement: str, url: str = POSTGRES_URL) -> None:
    import asyncpg

    conn = await asyncpg.connect(url)
    try:
        await conn.execute(statement)
    finally:
        await conn.close()


@asynccontextmanager
async def fresh_schema(prefix: str) -> AsyncIterator[str]:
    """A URL naming a new, empty schema (not migrated), dropped on the way out."""
    name = f"{prefix}_{os.getpid()}_{secrets.token_hex(4)}"
    await postgres(f"CREATE SCHEMA {name}")
    try:
        yield with_search_path(POSTGRES_URL, name)
    finally:
        await postgres(f"DROP SCHEMA {name} CASCADE")


async def fresh_schema_fixture(prefix: str) -> AsyncIterator[str]:
    """The body of a fixture yielding `fresh_schema(prefix)`; the test is skipped where
    asyncpg is not installed."""
    if not HAVE_ASYNCPG:
        import pytest

        pytest.skip("asyncpg is not installed")
    async with fresh_schema(prefix) as url:
        yield url


async def database_url(backend: str, tmp_path: Path, prefix: str) -> AsyncIterator[str]:
    """The body of a fixture parametrized over `["sqlite", "postgres"]`: a SQLite file in
    `tmp_path`, or `fresh_schema_fixture(prefix)`."""
    if backend == "sqlite":
        yield f"sqlite:///{tmp_path / 'signoff.db'}"
        return
    async for url in fresh_schema_fixture(prefix):
        yield url
