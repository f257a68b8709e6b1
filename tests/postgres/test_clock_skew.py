"""Two workers on one PostgreSQL database, the second one's clock five minutes off (ahead,
then behind, as on a host whose NTP is broken): the database's clock decides, so the skewed
worker steals no lease, fails and pages nothing, expires no approval early or late (beyond
the scheduler's tick) and takes over no outbox claim the other holds (issue 33)."""

from __future__ import annotations

import asyncio
import contextlib
from collections import Counter
from collections.abc import AsyncIterator
from collections.abc import Callable
from datetime import UTC
from datetime import datetime
from datetime import timedelta
from typing import Any

import pytest

from examples import refund_agent
from runtime import Agent
from runtime import Policies
from runtime import Policy
from runtime import Runtime
from runtime import ScriptedModel
from runtime import ToolContext
from runtime import errors
from runtime import tool
from runtime import tool_call
from store import ApprovalState
from store import EffectStatus
from store import RunStatus
from store import Store
from store import open_store

RUNS = 4
LEASE = 1.0
TOOL_SECONDS = 2.5
"""Longer than two leases: only renewals keep a run with its worker."""
TICK = 1.5
"""How late a timeout may fire: the scheduler's date job, on this loaded machine."""


def sync_agent(executed: Counter[str], worker: str) -> Agent:
    @tool(description="Sync a ledger slowly.", effect="irreversible", requires_approval=False)
    async def sync_ledger(name: str, *, ctx: ToolContext) -> str:
        executed[worker] += 1
        await asyncio.sleep(TOOL_SECONDS)
        return f"synced {name}"

    def policy(transcript: list[object]) -> object:
        return "done" if len(transcript) > 2 else tool_call("sync_ledger", {"name": "eu"})

    return Agent("syncer", model=ScriptedModel(policy), tools=[sync_ledger])


@contextlib.asynccontextmanager
async def looping(work: Callable[[], object], every: float) -> AsyncIterator[None]:
    """Call `work` (a coroutine function) every `every` seconds for the block."""

    async def loop() -> None:
        while True:
            await work()  # type: ignore[misc]
            await asyncio.sleep(every)

    task = asyncio.create_task(loop())
    try:
        yield
    finally:
        task.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await task


async def claims_of(
    store: Store, owner: str, clock: Callable[[], datetime], seen: list[int]
) -> None:
    now = clock()
    for item in await store.claim_outbox(owner, now=now, until=now + timedelta(seconds=30)):
        seen.append(item.id)  # claimed, and kept: a sender that is slow to post


async def wait_decided(store: Store, approval_id: str) -> datetime:
    """When (by the database's clock) the approval was first seen decided: its `decided_at`
    is stamped by whichever worker's clock decided it."""
    for _ in range(600):
        if (await store.get_approval(approval_id)).state != ApprovalState.PENDING:
            return await store.database_now()
        await asyncio.sleep(0.05)
    raise AssertionError(f"approval {approval_id} was never decided")


@pytest.mark.usefixtures("world")
@pytest.mark.parametrize("shift", [300.0, -300.0], ids=["ahead", "behind"])
async def test_a_worker_minutes_off_steals_nothing_and_expires_nothing_early(
    pg_url: str, shift: float
) -> None:
    skewed_clock = lambda: datetime.now(UTC) + timedelta(seconds=shift)  # noqa: E731
    executed: Counter[str] = Counter()
    policies = Policies(tools={"issue_refund": Policy(timeout=timedelta(hours=1))})
    async with open_store(pg_url) as store_a, open_store(pg_url) as store_b:

        def worker(store: Store, name: str, **options: Any) -> Runtime:
            agents = [sync_agent(executed, name), refund_agent.agent]
            return Runtime(
                store, agents, policies=policies, worker_id=name, lease_ttl=LEASE, **options
            )

        healthy = worker(store_a, "healthy")
        skewed = worker(store_b, "skewed", clock=skewed_clock)
        # An approval due in a few seconds, created by the healthy worker.
        await healthy.start("refund-agent", "Refund order 4471", run_id="order-4471")
        [approval] = await healthy.approvals(state=ApprovalState.PENDING)
        deadline = await store_a.database_now() + timedelta(seconds=3)
        assert await store_a.extend_deadline(
            approval.id, deadline=deadline, expected=approval.deadline
        )
        schedulers = [
            healthy.scheduler,
            skewed.scheduler,
        ]
        for scheduler in schedulers:
            await scheduler.start()
        claimed: dict[str, list[int]] = {"healthy": [], "skewed": []}
        try:
            drives = [
                asyncio.create_task(healthy.start("syncer", f"Sync {i}", run_id=f"sync-{i}"))
                for i in range(RUNS)
            ]
            async with (
                looping(skewed.recover, 0.1),
                looping(
                    lambda: claims_of(store_a, "healthy", healthy.clock, claimed["healthy"]), 0.2
                ),
                looping(lambda: claims_of(store_b, "skewed", skewed_clock, claimed["skewed"]), 0.2),
                asyncio.timeout(30),
            ):
                await asyncio.gather(*drives)
                expired_at = await wait_decided(store_a, approval.id)
        finally:
            for scheduler in schedulers:
                await scheduler.stop()

        runs = {run.id: run for run in await store_a.list_runs()}
        effects = [e for i in range(RUNS) for e in await store_a.list_effects(f"sync-{i}")]
        pages = await store_a.list_pages(open_only=False)
        decided = await store_a.get_approval(approval.id)

    assert executed == Counter({"healthy": RUNS})  # no lease stolen: nothing ran twice
    assert all(runs[f"sync-{i}"].status == RunStatus.DONE for i in range(RUNS))
    assert [e.status for e in effects] == [EffectStatus.COMPLETED] * RUNS
    assert pages == []
    assert not any(run.status == RunStatus.FAILED for run in runs.values())
    assert (decided.state, decided.reason) == (ApprovalState.DECLINED, "expired")
    late = (expired_at - deadline).total_seconds()
    assert 0 <= late < TICK, f"expired {late:+.2f}s after its deadline"
    both = set(claimed["healthy"]) & set(claimed["skewed"])
    assert both == set(), f"outbox rows claimed by both senders: {sorted(both)}"
    assert claimed["healthy"] or claimed["skewed"]


DEADLINE = 3.0
"""Seconds an approval waits: long enough to decide within, short enough to wait out."""


@pytest.mark.usefixtures("world")
@pytest.mark.parametrize("shift", [300.0, -300.0], ids=["ahead", "behind"])
async def test_a_worker_minutes_off_sets_and_judges_deadlines_by_the_database(
    pg_url: str, shift: float
) -> None:
    """The skewed worker alone creates three approvals: the one it decides before the
    deadline is taken, the one it decides after is refused as expired, the one nobody decides
    expires on time by its scheduler; the outbox rows it retries wait as long as asked."""
    skewed_clock = lambda: datetime.now(UTC) + timedelta(seconds=shift)  # noqa: E731
    policies = Policies(tools={"issue_refund": Policy(timeout=timedelta(seconds=DEADLINE))})
    async with open_store(pg_url) as store, open_store(pg_url) as other:
        skewed = Runtime(
            store, [refund_agent.agent], policies=policies, worker_id="skewed", clock=skewed_clock
        )
        created = await store.database_now()
        for order in ("early", "late", "idle"):
            await skewed.start("refund-agent", f"Refund order {order}", run_id=f"order-{order}")
        started = await store.database_now()
        approvals = {a.run_id: a for a in await skewed.approvals(state=ApprovalState.PENDING)}
        for approval in approvals.values():  # set by the database's clock, not the worker's
            assert approval.deadline is not None
            set_by = (approval.deadline - created).total_seconds()
            latest = (started - created).total_seconds() + DEADLINE
            assert DEADLINE <= set_by <= latest, f"deadline {set_by:+.1f}s after creation"

        idle = approvals["order-idle"]
        deadline = await store.database_now() + timedelta(seconds=2 * DEADLINE)
        assert await store.extend_deadline(idle.id, deadline=deadline, expected=idle.deadline)
        decided = await skewed.decide(approvals["order-early"].id, "approved", by="U0BOSS")
        assert decided.state == ApprovalState.APPROVED  # not expired early by its clock

        # Every outbox row so far, retried by the skewed sender in 2 s (by the database).
        now = skewed_clock()
        mine = await store.claim_outbox("skewed", now=now, until=now + timedelta(seconds=30))
        assert mine
        for item in mine:
            assert await store.retry_outbox(item.id, "skewed", after=2.0, error="429")
        retried_at = await store.database_now()
        now = datetime.now(UTC)
        until = now + timedelta(seconds=30)
        assert await other.claim_outbox("healthy", now=now, until=until) == []

        late_one = approvals["order-late"]
        assert late_one.deadline is not None
        await asyncio.sleep((late_one.deadline - await store.database_now()).total_seconds() + 0.1)
        with pytest.raises(errors.ApprovalExpired):
            await skewed.decide(late_one.id, "approved", by="U0BOSS")
        refused = await store.get_approval(late_one.id)
        assert (refused.state, refused.reason) == (ApprovalState.DECLINED, "expired")
        # due 2 s after the retry by the database, however long the steps above took
        wait = (retried_at + timedelta(seconds=2.1) - await store.database_now()).total_seconds()
        await asyncio.sleep(max(wait, 0.0))
        now = datetime.now(UTC)
        due = await other.claim_outbox("healthy", now=now, until=now + timedelta(seconds=30))
        assert {item.id for item in mine} <= {item.id for item in due}

        scheduler = skewed.scheduler  # judges by the database, as `serve` does
        await scheduler.start()
        try:
            expired_at = await wait_decided(store, idle.id)
        finally:
            await scheduler.stop()
        late = (expired_at - deadline).total_seconds()
        assert 0 <= late < TICK, f"expired {late:+.2f}s after its deadline"
