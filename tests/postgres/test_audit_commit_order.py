"""The audit trail lists events in the order their transactions committed on PostgreSQL
(issue 26.5), not the order they drew ids: two transactions that commit the other way round
from how they inserted are listed as they committed, and so is a crowd of them."""

from __future__ import annotations

import asyncio
import itertools
import random
from datetime import UTC
from datetime import datetime

import asyncpg
import pytest

from store import open_store

INSERT = (
    "INSERT INTO audit_events (at, actor, action, run_id, approval_id, detail) "
    "VALUES (now(), 'U0', $1, NULL, NULL, '{}'::jsonb)"
)


async def connect(url: str) -> asyncpg.Connection:
    base, _, search_path = url.partition("?search_path=")
    return await asyncpg.connect(base, server_settings={"search_path": search_path})


async def test_events_are_listed_in_commit_order_not_insert_order(pg_url: str) -> None:
    async with open_store(pg_url) as store:
        first, second = await connect(pg_url), await connect(pg_url)
        try:
            early, late = first.transaction(), second.transaction()
            await early.start()
            await first.execute(INSERT, "inserted-first")  # the lower id
            await late.start()
            await second.execute(INSERT, "inserted-second")
            await late.commit()
            await early.commit()
        finally:
            await first.close()
            await second.close()
        listed = [e.action for e in await store.list_events()]
        paged = await store.list_audit(after=(await store.list_audit())[0].id or 0)

    assert listed == ["inserted-second", "inserted-first"]
    assert [e.action for e in paged] == ["inserted-first"]


@pytest.mark.parametrize("seed", [1, 2])
async def test_a_crowd_of_writers_is_listed_as_it_committed(pg_url: str, seed: int) -> None:
    """Twelve connections insert, linger a random while, commit; each notes when its commit
    returned. Commits that returned one after another (not overlapping) are listed so."""
    rng = random.Random(seed)
    returned: dict[str, tuple[float, float]] = {}
    async with open_store(pg_url) as store:

        async def writer(name: str) -> None:
            conn = await connect(pg_url)
            try:
                tx = conn.transaction()
                await tx.start()
                await conn.execute(INSERT, name)
                await asyncio.sleep(rng.uniform(0, 0.2))
                asked = datetime.now(UTC).timestamp()
                await tx.commit()
                returned[name] = (asked, datetime.now(UTC).timestamp())
            finally:
                await conn.close()

        await asyncio.gather(*(writer(f"w{n:02}") for n in range(12)))
        listed = [e.action for e in await store.list_events()]

    assert sorted(listed) == sorted(returned)
    for before, after in itertools.pairwise(listed):
        # `after` committed later: its commit cannot have returned before `before`'s began
        assert returned[after][1] >= returned[before][0], (before, after, returned)
