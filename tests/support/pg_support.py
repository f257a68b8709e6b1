"""Where the PostgreSQL tests find their server, and the statements that set up their schemas."""

from __future__ import annotations

import importlib.util
import os

HAVE_ASYNCPG = importlib.util.find_spec("asyncpg") is not None
POSTGRES_URL = os.environ.get(
    "SIGNOFF_TEST_POSTGRES_URL", "postgresql://postgres@127.0.0.1:5432/test"
)


def with_search_path(url: str, schema: str) -> str:
    return f"{url}{'&' if '?' in url else '?'}search_path={schema}"


async def postgres(statement: str, url: str = POSTGRES_URL) -> None:
    import asyncpg

    conn = await asyncpg.connect(url)
    try:
        await conn.execute(statement)
    finally:
        await conn.close()
