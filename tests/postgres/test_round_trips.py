"""Round trips per step on PostgreSQL, counted on the wire by the benchmarks' counting proxy
(`benchmarks/pg_wire.py`): the counts are asserted exactly, so that a change that adds one is
seen (and one that removes one updates them). Never raise one without saying why."""

from __future__ import annotations

import sys
from datetime import timedelta
from pathlib import Path

import pytest
from support.pg_support import HAVE_ASYNCPG
from support.pg_support import POSTGRES_URL

from store import Approval
from store import ApprovalState
from store import AuditEvent
from store import Checkpoint
from store import Message
from store import Run
from store import Store
from store import open_store
from store.base import Ruling
from store.base import Voted
from store.records import utcnow

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
PER_RUN = 8
"""What a run costs once, whatever its length: its creation (one statement: the run, its first
checkpoint, the workers woken), the run read back, read again by its driver, its lease taken
(one statement that skips the fsync), its state loaded, its answer's statement, its lease
given back (one statement, the workers woken if the run is left running), and the run read
once it stopped. (It was 18: the creation a transaction of five round trips, each lease write
one of four.)"""


async def test_a_step_costs_exactly_the_round_trips_counted() -> None:
    from round_trips import count_steps

    counts = {count.kind: count for count in await count_steps(POSTGRES_URL, steps=6)}

    assert counts["lookup"].per_step == READ_STEP, counts
    assert counts["record"].per_step == IRREVERSIBLE_STEP, counts
    assert counts["lookup"].per_run == counts["record"].per_run == PER_RUN, counts


def opened(run_id: str) -> tuple[Run, Checkpoint]:
    """A new run and its first checkpoint."""
    at = utcnow()
    run = Run(id=run_id, agent="a", task="t", lineage_id=run_id, created_at=at, updated_at=at)
    return run, Checkpoint.opening(run_id, (Message(role="user", content="t"),), created_at=at)


async def test_creating_a_run_and_taking_and_giving_back_its_lease_are_one_round_trip_each(
    pg_url: str,
) -> None:
    from pg_wire import WireCounter

    async with WireCounter() as wire, open_store(wire.url(pg_url), pool_size=1) as store:
        await store.create_run(*opened("warm"))  # its statements prepared
        taken = await store.acquire_lease("warm", "w", until=utcnow(), now=utcnow())
        await store.release_lease("warm", "w", epoch=taken)
        await store.claim_runs("w", limit=1, until=utcnow(), now=utcnow())
        wire.reset()

        await store.create_run(*opened("r1"))
        made = wire.reset()
        now = utcnow()
        epoch = await store.acquire_lease("r1", "w", until=now + timedelta(30), now=now)
        taken = wire.reset()
        await store.release_lease("r1", "w", epoch=epoch)
        given_back = wire.reset()
        [claim] = await store.claim_runs("w", limit=5, until=now + timedelta(30), now=now)
        claimed = wire.reset()

    assert (made, taken, given_back, claimed) == (1, 1, 1, 1)
    assert epoch is not None
    assert (claim.run_id, claim.epoch) == ("r1", epoch + 1)


DECISION = 1
"""A person's decision that decides at once (no quorum, no spend held): one statement
(`decide_at_once`: the compare-and-set, its outbox row, its run made ready, its audit event).
It was a transaction of eight (BEGIN, the row locked, the set, the row read back, the outbox,
the run, the event, COMMIT), the most of a click's round trips in a burst of them."""


async def test_a_decision_at_once_is_one_round_trip_and_a_vote_toward_a_quorum_is_not(
    pg_url: str,
) -> None:
    from pg_wire import WireCounter

    async with WireCounter() as wire, open_store(wire.url(pg_url), pool_size=1) as store:
        for run_id in ("warm", "r1", "r2"):
            await store.create_run(*opened(run_id))
        at_once, quorum, warm = (
            Approval(
                id=f"a-{r}",
                run_id=r,
                call_id="c",
                tool="pay",
                args={},
                created_at=utcnow(),
                required_approvals=n,
            )
            for r, n in (("r1", 1), ("r2", 2), ("warm", 1))
        )
        for approval in (at_once, quorum, warm):
            await store.create_approval(approval)
        await decide(store, warm.id)  # its statement prepared
        wire.reset()

        decided = await decide(store, at_once.id)
        one = wire.reset()
        voted = await decide(store, quorum.id)
        body = wire.reset()
        events = [e.action for e in await store.list_audit(approval_id=at_once.id)]

    assert (decided.approval.state, decided.votes, one) == (ApprovalState.APPROVED, 0, DECISION)
    assert (voted.approval.state, voted.votes) == (ApprovalState.PENDING, 1)
    assert body > 1  # the body's transaction
    assert events.count("approval_approved") == 1


async def decide(store: Store, approval_id: str) -> Voted:
    """A person's approval with its audit event, as the runtime casts it."""
    at = utcnow()
    event = AuditEvent(action="approval_approved", actor="U1", approval_id=approval_id, at=at)
    return await store.cast_vote(
        approval_id, Ruling(ApprovalState.APPROVED, by="U1", at=at), event=event
    )


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
