"""Fixtures for the PostgreSQL-only tests: a fresh schema per test, for several processes."""

from __future__ import annotations

import os
import secrets
from collections.abc import AsyncIterator

import pytest
from support.pg_support import HAVE_ASYNCPG, POSTGRES_URL, postgres, with_search_path


@pytest.fixture
async def pg_url() -> AsyncIterator[str]:
    """A URL naming a new, empty schema (not migrated), dropped after the test."""
    if not HAVE_ASYNCPG:
        pytest.skip("asyncpg is not installed")
    name = f"signoff_test_{os.getpid()}_{secrets.token_hex(4)}"
    await postgres(f"CREATE SCHEMA {name}")
    try:
        yield with_search_path(POSTGRES_URL, name)
    finally:
        await postgres(f"DROP SCHEMA {name} CASCADE")
