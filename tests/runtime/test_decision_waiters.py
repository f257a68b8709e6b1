"""Waiting in this process for a decision (`runtime.approvals.waiting`, the HTTP API's long
poll): a waiter cancelled in the loop turn its decision lands in is cancelled. On Python 3.11
`asyncio.wait_for` returned the wait's result instead and dropped the cancellation, as it
did to the run queue (issue 44.4)."""

from __future__ import annotations

import asyncio

import pytest

from runtime.approvals.waiting import DecisionWaiters
from store import Approval
from store.records import utcnow


def decided(approval_id: str) -> Approval:
    return Approval(id=approval_id, tool="pay", args={}, created_at=utcnow())


async def test_a_waiter_cancelled_as_its_decision_lands_is_cancelled() -> None:
    waiters = DecisionWaiters()
    waiting = asyncio.get_running_loop().create_task(waiters.wait("a1", 60.0))
    await asyncio.sleep(0)  # it waits on the decision

    await waiters.approval_decided(decided("a1"), None)  # the same turn as the cancel
    waiting.cancel()

    with pytest.raises(asyncio.CancelledError):
        await waiting


async def test_a_waiter_returns_on_its_decision_or_its_time() -> None:
    waiters = DecisionWaiters()
    waiting = asyncio.get_running_loop().create_task(waiters.wait("a1", 60.0))
    await asyncio.sleep(0)
    await waiters.approval_decided(decided("a1"), None)
    async with asyncio.timeout(5):
        await waiting
    async with asyncio.timeout(5):
        await waiters.wait("a2", 0.01)  # nobody decides it: back after its time
