"""A limit holds across workers killed mid-flight: 200 refunds to one customer against a
$5,000 limit, driven by two real `signoff serve` workers on one database (PostgreSQL, and a
SQLite file) that are SIGKILLed and restarted while they work. What the payment provider
really refunded is at most $5,000; every refund past the limit waits, asked under the
limit's policy; and the counter equals what the settled holds add up to (nothing given back
twice, nothing held by a refund that did not happen)."""

from __future__ import annotations

import asyncio
import random
import time
from collections.abc import AsyncIterator
from pathlib import Path

import pytest
from support import spend_agents
from support.pg_support import database_url
from support.serve_workers import Worker
from support.serve_workers import worker_env

from runtime import Runtime
from runtime.spend.config import SpendConfig
from store import ApprovalState
from store import RunStatus
from store import open_store

RUNS = 200
LIMIT = 500_000  # cents: $5,000 per customer in 30 days
KILLS = 6
CONFIG = spend_agents.limits_config(LIMIT)


@pytest.fixture(params=["sqlite", "postgres"])
async def database(request: pytest.FixtureRequest, tmp_path: Path) -> AsyncIterator[str]:
    async for url in database_url(request.param, tmp_path, "signoff_limits"):
        yield url


async def create_runs(url: str) -> dict[str, int]:
    """The refunds, created but not driven (the workers' queue takes them); amounts by run."""
    draw = random.Random(41)
    amounts = {f"refund-{i}": draw.randrange(1000, 8001) for i in range(RUNS)}
    async with open_store(url) as store:
        rt = Runtime(store, [spend_agents.agent])
        for i, (run_id, cents) in enumerate(amounts.items()):
            order = f"fail-{i}" if i % 10 == 3 else f"o-{i}"  # fails before the provider
            task = spend_agents.refund("c1", order, cents)
            await rt.create("refunds", task, run_id=run_id, requested_by="U0ASKER")
    return amounts


async def settled(url: str) -> dict[str, RunStatus]:
    async with open_store(url, migrate=False) as store:
        return {run.id: run.status for run in await store.list_runs(limit=RUNS + 1)}


def wait_done(url: str, count: int, within: float) -> None:
    """Until at least `count` runs are done."""
    deadline = time.monotonic() + within
    while time.monotonic() < deadline:
        if list(asyncio.run(settled(url)).values()).count(RunStatus.DONE) >= count:
            return
        time.sleep(0.05)
    raise AssertionError(f"fewer than {count} runs done in {within} s")


def wait_settled(url: str, within: float) -> dict[str, RunStatus]:
    """Until every run is done or waits for a person (past the limit)."""
    deadline = time.monotonic() + within
    found: dict[str, RunStatus] = {}
    while time.monotonic() < deadline:
        found = asyncio.run(settled(url))
        if set(found.values()) <= {RunStatus.DONE, RunStatus.WAITING_APPROVAL}:
            return found
        time.sleep(0.25)
    return found


@pytest.mark.slow
async def test_two_workers_killed_again_and_again_never_refund_past_the_limit(
    database: str, tmp_path: Path, world: Path, workers: list[Worker]
) -> None:
    (tmp_path / "signoff.toml").write_text(CONFIG)
    amounts = await create_runs(database)
    env = worker_env(database, world, SIGNOFF_LEASE_TTL="2")
    workers += [Worker("worker-a", env, tmp_path), Worker("worker-b", env, tmp_path)]
    for worker in workers:
        worker.start()
    for kill in range(KILLS):  # kill each in turn as the refunds go on, and start it again
        await asyncio.to_thread(wait_done, database, (kill + 1) * RUNS // 10, 60)
        workers[kill % 2].kill()
        workers[kill % 2].start(wait=False)

    statuses = await asyncio.to_thread(wait_settled, database, 120)

    gave_back = [
        line
        for worker in workers
        for line in worker.log.read_text().splitlines()
        if "this worker held before it started again" in line
    ]
    # A restart slower than the lease lets the other worker take the runs over instead of a
    # give-back (restarts now take ~3 s against a 2 s lease), so the log cannot say whether a
    # kill found refunds in flight; what follows holds either way. (Open: count takeovers.)
    print(f"{len(gave_back)} of {KILLS} restarts gave runs back")
    assert len(statuses) == RUNS
    assert set(statuses.values()) <= {RunStatus.DONE, RunStatus.WAITING_APPROVAL}, statuses
    refunded = spend_agents.refunded("c1")
    assert refunded <= LIMIT
    async with open_store(database, migrate=False) as store:
        rt = Runtime(store, [spend_agents.agent], spend=SpendConfig.model_validate({}))
        approvals = {a.run_id: a for a in await rt.approvals()}
        held = [h for run_id in amounts for h in await store.holds_of_run(run_id)]
        (state,) = approvals["refund-0"].rule.limits  # type: ignore[union-attr]
        ((used, calls),) = await store.limit_usage([state])
    asked = [a for a in approvals.values() if a.state == ApprovalState.PENDING]
    assert asked, "no refund went past the limit: the test proves nothing"
    for approval in asked:  # every refund past the limit waits for the limit's policy
        assert approval.policy == "refund_leads"
        assert approval.rule is not None
        assert approval.rule.limit == "per_customer"
        (past,) = approval.rule.limits
        assert past.after > LIMIT
        assert statuses[approval.run_id or ""] == RunStatus.WAITING_APPROVAL
    assert refunded > LIMIT - 2 * max(amounts.values())  # the limit was used, nearly full
    assert {h["state"] for h in held} == {"settled"}  # no hold left behind
    assert used == sum(h["amount"] for h in held) == refunded  # nothing given back twice
    assert calls == len(held)
    failed = [r for i, r in enumerate(amounts) if i % 10 == 3]
    assert all(
        approvals[r].state == ApprovalState.APPROVED
        for r in failed
        if r not in {a.run_id for a in asked}
    )
