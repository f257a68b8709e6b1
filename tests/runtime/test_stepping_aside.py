"""A worker that finds the database at a schema newer than it knows steps aside: its queue
claims nothing more, a driver waiting on the model gives its run back without writing a step,
its outbox claims stop, its approval timers rest, and it says once what to do; a row it
cannot read puts the run back instead of failing it. (Real SQLite files; the newer schema is
a test's migration applied by a second store, as a newer release would.)"""

from __future__ import annotations

import asyncio
import logging
import sqlite3
from collections.abc import Sequence
from datetime import UTC
from datetime import datetime
from datetime import timedelta
from pathlib import Path

import pytest
from support.future_schema import known_with_future

from runtime import Agent
from runtime import Reply
from runtime import Runtime
from runtime import tool_call
from runtime.runs.aside import Aside
from runtime.tools import ToolSpec
from runtime.tools import tool
from store import Approval
from store import ApprovalState
from store import Message
from store import RunStatus
from store import migration
from store import open_store

WORKER = "worker-old"


@tool(description="Look an order up.", effect="read")
def lookup(order: str) -> dict[str, str]:
    return {"order": order}


class HeldModel:
    """Asks for one lookup, then answers; each call says it began and waits to be let go."""

    def __init__(self) -> None:
        self.asked = asyncio.Event()
        self.go = asyncio.Event()

    async def complete(self, messages: Sequence[Message], tools: Sequence[ToolSpec]) -> Reply:
        self.asked.set()
        await self.go.wait()
        if any(m.role == "tool" for m in messages):
            return Reply("done")
        return Reply("looking", (tool_call("lookup", {"order": "7"}),))


@pytest.fixture
def db_url(tmp_path: Path) -> str:
    return f"sqlite:///{tmp_path / 'signoff.db'}"


async def migrate_to_the_future(url: str, future: pytest.MonkeyPatch) -> int:
    """Migrate the database one version past this Signoff (safe while it runs), from a
    store that knows that version, as a newer release would; that version."""
    with future.context() as newer:
        newer.setattr(migration, "migrations", known_with_future(safe=True))
        async with open_store(url) as store:
            return await store.schema_version()


async def wait_for(check: object, within: float = 5.0) -> None:
    deadline = asyncio.get_running_loop().time() + within
    while not check():  # type: ignore[operator]
        assert asyncio.get_running_loop().time() < deadline, "not within the time"
        await asyncio.sleep(0.01)


async def test_a_driver_waiting_on_the_model_gives_its_run_back_untouched(
    db_url: str, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    model = HeldModel()
    agent = Agent("held", model=model, tools=[lookup])
    async with open_store(db_url) as store:
        rt = Runtime(store, [agent], worker_id=WORKER, lease_ttl=30)
        queue = rt.serve_queue(capacity=4, poll=60)
        run, _ = await rt.create("held", "look order 7 up")
        await rt.recover_into_queue()
        await asyncio.wait_for(model.asked.wait(), 5)
        known = store.known_schema

        found = await migrate_to_the_future(db_url, monkeypatch)
        with caplog.at_level(logging.ERROR, logger="signoff.upgrade"):
            queue.wake(schema=True)  # what a migration's notification does (PostgreSQL)
            await wait_for(lambda: not queue.driving)

        after = await store.get_run(run.id)
        assert (after.status, after.lease_owner) == (RunStatus.RUNNING, None)
        assert [cp.seq for cp in await store.history(run.id)] == [0]  # no step written
        assert (await store.ready_runs())[0] == 1
        assert rt.aside.active
        line = f"for schema {known}; the database is at {found}: replace this worker"
        assert [r.getMessage() for r in caplog.records if line in r.getMessage()] == [
            f"this worker runs Signoff {rt.aside.release} {line}"
        ]
        await queue.stop()

    with monkeypatch.context() as newer:  # a worker of the newer release finishes it
        newer.setattr(migration, "migrations", known_with_future(safe=True))
        model.go.set()
        async with open_store(db_url) as store:
            assert (await Runtime(store, [agent], worker_id="worker-new").drive(run.id)).status == (
                RunStatus.DONE
            )


async def test_a_worker_that_stepped_aside_claims_no_run_and_no_outbox_row(
    db_url: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Two workers of the older release: one finds out by claiming runs, the other by
    claiming outbox rows."""
    agent = Agent("held", model=HeldModel(), tools=[lookup])
    async with open_store(db_url) as store:
        runs, sender = (Runtime(store, [agent], worker_id=w) for w in (WORKER, "worker-old-2"))
        run, _ = await runs.create("held", "look order 7 up")
        now = datetime.now(UTC)
        overdue = Approval(id="a1", tool="lookup", args={}, deadline=now - timedelta(minutes=1))
        await store.create_approval(overdue)  # and its outbox row
        await migrate_to_the_future(db_url, monkeypatch)

        queue = runs.serve_queue(capacity=4, poll=60)
        await runs.recover_into_queue()
        await wait_for(lambda: runs.aside.active)
        await queue.stop()
        claimed = await sender.deliveries.claim_outbox(WORKER, now=now, until=now + timedelta(1))

        assert (runs.aside.active, sender.aside.active) == (True, True)
        assert claimed == []
        assert (await store.get_run(run.id)).lease_owner is None
        assert (await store.ready_runs())[0] == 1
        assert (await store.outbox_backlog())[0] == 1
        assert await sender.desk.tick(now) is None  # its timers rest: the newer workers expire it
        assert (await store.get_approval("a1")).state == ApprovalState.PENDING


async def test_a_row_the_worker_cannot_read_puts_the_run_back_instead_of_failing_it(
    db_url: str, caplog: pytest.LogCaptureFixture
) -> None:
    """A budget with a limit this Signoff does not know (as a newer one might write)."""
    agent = Agent("held", model=HeldModel(), tools=[lookup])
    path = db_url.removeprefix("sqlite:///")
    async with open_store(db_url) as store:
        rt = Runtime(store, [agent], worker_id=WORKER)
        run, _ = await rt.create("held", "look order 7 up")
        with sqlite3.connect(path) as conn:
            conn.execute("UPDATE runs SET budget = '{\"max_tool_calls\": 3}'")
        conn.close()
        with caplog.at_level(logging.WARNING, logger="signoff.queue"):
            queue = rt.serve_queue(capacity=4, poll=60)
            await rt.recover_into_queue()
            await wait_for(lambda: "cannot read" in caplog.text)
            await asyncio.sleep(0.5)
            await queue.stop()

        with sqlite3.connect(path) as conn:
            found = conn.execute("SELECT status, lease_owner, ready_at IS NOT NULL FROM runs")
            assert found.fetchall() == [("running", None, 1)]  # not failed: back in the queue
        conn.close()
        assert [cp.seq for cp in await store.history(run.id)] == [0]
        assert not rt.aside.active  # the schema is this Signoff's own: it serves on
        assert caplog.text.count("cannot read") == 1  # not claimed again at once


def test_stepping_aside_happens_once_and_only_for_a_newer_schema(
    caplog: pytest.LogCaptureFixture,
) -> None:
    aside, told = Aside(release="9.9"), []
    aside.on_step_aside(lambda: told.append("queue"))

    aside.seen(20, 20)
    assert not aside.active
    with caplog.at_level(logging.ERROR, logger="signoff.upgrade"):
        aside.seen(21, 20)
        aside.seen(22, 20)

    assert aside.active
    assert told == ["queue"]
    assert caplog.messages == [
        "this worker runs Signoff 9.9 for schema 20; the database is at 21: replace this worker"
    ]
