"""What paged the freeze soak for results in hand on PostgreSQL: a worker frozen inside a write
to the soak's world database holds that file's write lock, and a tool that waited for it on
the event loop stalled its whole worker, lease renewals included, so another worker took its
runs over and paged them though the stalled one had (or was about to have) the result.

Here the lock is held by the test (as the frozen worker would) while a real worker process
pays, from just after the payment is written `started`: its tool must wait off the loop, its
lease must stay renewed, and the run must finish with no page once the lock is let go,
though another runtime stands ready to take over."""

from __future__ import annotations

import asyncio
import sqlite3
import subprocess
import sys
import time
from contextlib import closing
from pathlib import Path

import pytest

from runtime import Runtime
from store import EffectStatus
from store import RunStatus
from store import Store
from store import open_store

from .soak_worker import AGENT
from .soak_worker import LEASE
from .soak_worker import agent
from .soak_worker import world

pytestmark = pytest.mark.slow

WORKER = Path(__file__).with_name("soak_worker.py")
HELD_FOR = 3 * LEASE


async def paying(store: Store, run_id: str) -> None:
    deadline = time.monotonic() + 20
    while time.monotonic() < deadline:
        effects = await store.list_effects(run_id)
        if any(e.tool == "pay" and e.status == EffectStatus.STARTED for e in effects):
            return
        await asyncio.sleep(0.02)
    raise AssertionError("the worker never started the payment")


async def ended(store: Store, run_id: str) -> RunStatus:
    deadline = time.monotonic() + 20
    while time.monotonic() < deadline:
        run = await store.get_run(run_id)
        if run.status in (RunStatus.DONE, RunStatus.FAILED):
            return run.status
        await asyncio.sleep(0.05)
    raise AssertionError("the run did not end")


def start_worker(args: list[str], log: Path) -> subprocess.Popen[bytes]:
    with log.open("wb") as out:
        return subprocess.Popen(args, stdout=out, stderr=subprocess.STDOUT)


async def test_a_worker_waiting_for_a_frozen_ones_world_lock_keeps_its_lease(
    tmp_path: Path,
) -> None:
    url, world_path = f"sqlite:///{tmp_path / 'signoff.db'}", tmp_path / "world.db"
    world(str(world_path)).close()
    args = [sys.executable, str(WORKER), url, str(world_path), "w0", str(tmp_path / "full")]
    proc = start_worker(args, tmp_path / "worker.log")
    try:
        async with open_store(url) as store:
            other = Runtime(store, [agent(str(world_path), "w1")], worker_id="w1", lease_ttl=LEASE)
            await other.create(AGENT, "order-1", run_id="run-1")
            await paying(store, "run-1")
            # Standing by only once w0 pays: started sooner, it could claim the new run
            # itself while w0 is still starting up.
            taking_over = asyncio.create_task(other.follow_lapses(poll=LEASE))
            with closing(sqlite3.connect(world_path, isolation_level=None)) as lock:
                # As a worker frozen inside a world write: the tool's write of the payment,
                # due once it has slept TOOL_SECONDS, waits for the lock past the lease.
                lock.execute("BEGIN IMMEDIATE")
                await asyncio.sleep(HELD_FOR)
                lock.execute("ROLLBACK")
            status = await ended(store, "run-1")
            taking_over.cancel()
            pages = await store.list_pages()
        with closing(sqlite3.connect(world_path)) as conn:
            paid = conn.execute("SELECT worker FROM payments").fetchall()
    finally:
        proc.terminate()
        proc.wait(timeout=10)
    output = (tmp_path / "worker.log").read_text()
    assert [p.detail for p in pages] == [], output
    assert status == RunStatus.DONE, output
    assert paid == [("w0",)]
