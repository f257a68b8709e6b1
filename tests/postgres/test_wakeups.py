"""LISTEN/NOTIFY: a decision committed by one process wakes another, which resumes the run."""

from __future__ import annotations

import asyncio
import contextlib
from datetime import UTC
from datetime import datetime
from pathlib import Path

import pytest
from support.helpers import Finished
from support.pg_support import postgres

from examples import refund_agent
from runtime import Runtime
from runtime.runs.wakeups import Wakeups
from store import Approval
from store import ApprovalState
from store import RunStatus
from store import open_store


@pytest.mark.usefixtures("world")
async def test_a_decision_made_elsewhere_resumes_the_run_here_without_polling(
    pg_url: str,
) -> None:
    async with open_store(pg_url) as here_store, open_store(pg_url) as there_store:
        told = Finished()
        here = Runtime(here_store, [refund_agent.agent], told, worker_id="here")
        there = Runtime(there_store, [refund_agent.agent], worker_id="there")
        wakeups = Wakeups(here)
        assert await wakeups.start()
        try:
            await there.start("refund-agent", "Refund order 4471", run_id="order-4471")
            assert (await there.get("order-4471")).status == RunStatus.WAITING_APPROVAL
            [approval] = await there.approvals(state=ApprovalState.PENDING)

            await there.decide(approval.id, "approved", by="U_APPROVER", resume=False)

            async with asyncio.timeout(10):  # recovery's poll is not running: only the wakeup
                await told.event("order-4471").wait()
        finally:
            await wakeups.stop()
        run = await there.get("order-4471")
        effects = await there_store.list_effects("order-4471")
    assert run.status == RunStatus.DONE
    assert any(e.tool == "issue_refund" for e in effects)


async def test_a_store_that_cannot_listen_leaves_the_polls_to_do_the_work(
    tmp_path: Path,
) -> None:
    async with open_store(f"sqlite:///{tmp_path / 's.db'}") as store:
        wakeups = Wakeups(Runtime(store, [refund_agent.agent], worker_id="w"))
        assert not await wakeups.start()
        await wakeups.stop()


async def test_a_lost_listening_connection_is_opened_again(pg_url: str) -> None:
    heard: asyncio.Queue[str] = asyncio.Queue()
    async with open_store(pg_url) as store:
        stop = await store.listen(heard.put_nowait)  # type: ignore[attr-defined]
        try:
            await postgres(
                "SELECT pg_terminate_backend(pid) FROM pg_stat_activity "
                f"WHERE query = 'LISTEN \"signoff:{schema_of(pg_url)}\"'"
            )
            for attempt in range(20):  # each new approval announces itself once it listens
                approval = Approval(
                    id=f"appr-{attempt}", tool="t", args={}, created_at=datetime.now(UTC)
                )
                await store.create_approval(approval)
                with contextlib.suppress(TimeoutError):
                    assert await asyncio.wait_for(heard.get(), 0.5) == "approval_requested"
                    break
            else:
                pytest.fail("the listener never came back")
        finally:
            await stop()
    assert attempt > 0  # the first one was missed: the connection was really cut


def schema_of(url: str) -> str:
    return url.rsplit("search_path=", 1)[1]
