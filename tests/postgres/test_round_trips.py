"""Round trips per step on PostgreSQL, counted on the wire by the benchmarks' counting proxy
(`benchmarks/pg_wire.py`): the counts are asserted exactly, so that a change that adds one is
seen (and one that removes one updates them). Never raise one without saying why."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest
from support.pg_support import HAVE_ASYNCPG, POSTGRES_URL

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "benchmarks"))

pytestmark = pytest.mark.skipif(not HAVE_ASYNCPG, reason="asyncpg is not installed")

READ_STEP = 1
"""One statement in a transaction of its own (`commit_step`): the lease and seq checks, the
checkpoints, the last read's finish and this one's start in the ledger."""
IRREVERSIBLE_STEP = 2
"""Two writes: the effect's start, durable before the tool runs, is one call of the function
`signoff_start_step` (migration 0019: the lease and seq checks, the checkpoint, the lineage
and key locks, the look-ups each in a statement of its own, so they see what committed
while the locks were awaited, and the insert); its result is one statement."""
PER_RUN = 18
"""What a run costs once, whatever its length: its creation (a transaction of six), its lease
taken and given back (short transactions that skip the fsync), its state loaded, and its
answer's statement."""


async def test_a_step_costs_exactly_the_round_trips_counted() -> None:
    from round_trips import count_steps

    counts = {count.kind: count for count in await count_steps(POSTGRES_URL, steps=6)}

    assert counts["lookup"].per_step == READ_STEP, counts
    assert counts["record"].per_step == IRREVERSIBLE_STEP, counts
    assert counts["lookup"].per_run == counts["record"].per_run == PER_RUN, counts


async def test_the_counter_counts_each_statement_and_transaction() -> None:
    import asyncpg
    from pg_wire import WireCounter

    async with WireCounter() as wire:
        conn = await asyncpg.connect(wire.url(POSTGRES_URL))
        try:
            await conn.fetchval("SELECT 1")  # prepare + execute, then cached
            wire.reset()
            await conn.fetchval("SELECT 1")
            assert wire.reset() == 1
            async with conn.transaction():
                await conn.fetchval("SELECT 1")
            assert wire.reset() == 3  # BEGIN, the statement, COMMIT
        finally:
            await conn.close()
