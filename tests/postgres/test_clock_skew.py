"""Two workers on one PostgreSQL database, the second one's clock five minutes off (ahead,
then behind, as on a host whose NTP is broken): the database's clock decides, so the skewed
worker steals no lease, fails and pages nothing, expires no approval early or late (beyond
the scheduler's tick) and takes over no outbox claim the other holds (issue 33)."""

from __future__ import annotations

import asyncio
import contextlib
from collections import Counter
from collections.abc import AsyncIterator, Callable
from datetime import UTC, datetime, timedelta

import pytest

from examples import refund_agent
from runtime import Agent, Policies, Policy, Runtime, ScriptedModel, ToolContext, tool, tool_call
from runtime.scheduler import ApprovalScheduler
from store import ApprovalState, EffectStatus, RunStatus, Store, open_store

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
        healthy = Runtime(
            store_a,
            [sync_agent(executed, "healthy"), refund_agent.agent],
            policies=policies,
            worker_id="healthy",
            lease_ttl=LEASE,
        )
        skewed = Runtime(
            store_b,
            [sync_agent(executed, "skewed"), refund_agent.agent],
            policies=policies,
            worker_id="skewed",
            lease_ttl=LEASE,
            clock=skewed_clock,
        )
        # An approval due in a few seconds, created by the healthy worker.
        await healthy.start("refund-agent", "Refund order 4471", run_id="order-4471")
        [approval] = await healthy.approvals(state=ApprovalState.PENDING)
        deadline = await store_a.database_now() + timedelta(seconds=3)
        assert await store_a.extend_deadline(
            approval.id, deadline=deadline, expected=approval.deadline
        )
        schedulers = [
            ApprovalScheduler(healthy, now=store_a.database_now),
            ApprovalScheduler(skewed, now=store_b.database_now),
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
