"""Fixtures for the PostgreSQL-only tests: a fresh schema per test, for several processes."""

from __future__ import annotations

from collections.abc import AsyncIterator

import pytest
from support.pg_support import HAVE_ASYNCPG, fresh_schema


@pytest.fixture
async def pg_url() -> AsyncIterator[str]:
    """A URL naming a new, empty schema (not migrated), dropped after the test."""
    if not HAVE_ASYNCPG:
        pytest.skip("asyncpg is not installed")
    async with fresh_schema("signoff_test") as url:
        yield url
