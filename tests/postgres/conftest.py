"""Fixtures for the PostgreSQL-only tests: a fresh schema per test, for several processes."""

from __future__ import annotations

from collections.abc import AsyncIterator

import pytest
from support.pg_support import fresh_schema_fixture


@pytest.fixture
async def pg_url() -> AsyncIterator[str]:
    """A URL naming a new, empty schema (not migrated), dropped after the test."""
    async for url in fresh_schema_fixture("signoff_test"):
        yield url
